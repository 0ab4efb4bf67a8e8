"""The replay driver: `Replay` runs spec files test by test in each persistence mode (classifying
each, then running it with the watch it needs), keeps the `Result`s and reports them (a line per
run as it ends, the per-file table, the final `spec replay: …` line)."""
from __future__ import annotations

import json
import sys
import time
import traceback
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Optional

from .classify import SCRIPTED_REASONS, classify
from .errors import HarnessError, ServerGone, StepFailure
from .files import find_spec_dir, short_name, spec_file_path
from .run import SpecRun

MODES = ("persistent", "memory")


@dataclass
class Result:
    file: str
    name: str
    mode: str
    status: str  # PASS | FAIL | SKIP | ERROR
    reason: str = ""
    detail: str = ""
    seconds: float = 0.0


class Replay:
    def __init__(self, base_url: str, spec_dir: Optional[str] = None, verbose: int = 0,
                 modes=MODES, out=None, watch: str = "auto"):
        self.base_url = base_url.rstrip("/")
        # auto: backend-driven watch where the steps map onto backend writes, else scripted.
        self.watch = watch
        self.spec_dir = find_spec_dir(spec_dir)
        self.verbose = verbose
        self.modes = tuple(modes)
        self.results: list[Result] = []
        self.out = out or sys.stdout

    def print(self, *a):
        print(*a, file=self.out, flush=True)

    def load(self, short: str) -> dict:
        with open(spec_file_path(self.spec_dir, short)) as f:
            return json.load(f)

    def expand(self, files) -> list[str]:
        """File short names, with "all" standing for every spec file found."""
        if "all" in files:
            return sorted(short_name(p) for p in self.spec_dir.glob("*_spec_test.json"))
        return list(files)

    def run_files(self, files, test_filter: Optional[str] = None) -> list[Result]:
        for short in self.expand(files):
            specs = self.load(short)
            names = list(specs)
            if test_filter:
                exact = [n for n in names if n == test_filter]
                names = exact or [n for n in names if test_filter.lower() in n.lower()]
            for name in names:
                for mode in self.modes:
                    self.results.append(self.run_one(short, name, specs[name], mode))
        return self.results

    def run_one(self, short: str, name: str, spec: dict, mode: str) -> Result:
        reasons = classify(spec, mode)
        scripted = self.watch == "scripted" or (self.watch == "auto" and bool(reasons) and set(reasons) <= SCRIPTED_REASONS)
        if scripted:
            reasons = [r for r in reasons if r not in SCRIPTED_REASONS]
        # The reason counted is one a scripted watch cannot remove.
        reasons.sort(key=lambda r: r in SCRIPTED_REASONS)
        if reasons:
            res = Result(short, name, mode, "SKIP", reason=reasons[0], detail="; ".join(reasons))
            self.print(f"  SKIP [{mode}] {short}: {name} ({'; '.join(reasons)})")
            return res
        run = SpecRun(self, short, name, spec, mode, scripted=scripted)
        t0 = time.monotonic()
        try:
            run.run()
            res = Result(short, name, mode, "PASS")
        except StepFailure as e:
            res = Result(short, name, mode, "FAIL", detail=str(e))
        except ServerGone as e:
            self.results.append(Result(short, name, mode, "ERROR", detail=f"harness error: {e}"))
            raise
        except HarnessError as e:
            res = Result(short, name, mode, "ERROR", detail=f"harness error: {e}")
        except Exception:  # a harness bug: report it, keep going, exit non-zero at the end
            res = Result(short, name, mode, "ERROR", detail="harness crash:\n" + traceback.format_exc())
        finally:
            run.teardown()
        res.seconds = time.monotonic() - t0
        line = f"  {res.status} [{mode}] {short}: {name} ({res.seconds:.2f}s)"
        if res.status != "PASS":
            line += "\n      " + res.detail.replace("\n", "\n      ")
            if self.verbose == 1 and run.log_lines:
                line += "\n      log:\n        " + "\n        ".join(run.log_lines[-40:])
        self.print(line)
        return res

    # -- reporting ------------------------------------------------------------------------------
    def summary(self) -> dict:
        per_file: "OrderedDict[str, Counter]" = OrderedDict()
        for r in self.results:
            per_file.setdefault(r.file, Counter())[r.status] += 1
        total = Counter()
        for c in per_file.values():
            total.update(c)
        skip_reasons = Counter(r.reason for r in self.results if r.status == "SKIP")
        return {"per_file": per_file, "total": total, "skip_reasons": skip_reasons}

    def table(self) -> str:
        s = self.summary()
        lines = [f"{'file':<16}{'pass':>6}{'fail':>6}{'error':>7}{'skip':>6}"]
        for f, c in s["per_file"].items():
            lines.append(f"{f:<16}{c['PASS']:>6}{c['FAIL']:>6}{c['ERROR']:>7}{c['SKIP']:>6}")
        t = s["total"]
        lines.append(f"{'total':<16}{t['PASS']:>6}{t['FAIL']:>6}{t['ERROR']:>7}{t['SKIP']:>6}")
        if s["skip_reasons"]:
            lines.append("skipped (test x mode), by first reason:")
            for reason, n in s["skip_reasons"].most_common():
                lines.append(f"  {n:>4}  {reason}")
        return "\n".join(lines)

    def final_line(self) -> str:
        t = self.summary()["total"]
        return f"spec replay: {t['PASS']} passed, {t['FAIL'] + t['ERROR']} failed, {t['SKIP']} skipped"
