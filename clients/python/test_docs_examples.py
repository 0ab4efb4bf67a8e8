"""The README's quick start, run as written: its "Offline in five minutes" shell block goes to
bash against the test server (in a fresh project and client, so other tests' data cannot change
its answers), with the listener it starts in a second terminal run in the background."""
import os
import re
import subprocess
import uuid

import pytest

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def shell_block(heading):
    text = open(README, encoding="utf-8").read()
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    assert len(blocks) == 1, f"expected one sh block under {heading!r}"
    return blocks[0]


def test_offline_walkthrough_runs_as_written(base_url, tmp_path):
    script = shell_block("Offline in five minutes")
    run = uuid.uuid4().hex[:8]
    script = script.replace("H=http://127.0.0.1:8080", f"H={base_url}")
    script = script.replace("demo-project", f"readme-{run}").replace("/clients/A", f"/clients/readme-{run}")
    # the listener "in a second terminal": in the background, its events kept for the checks
    script = re.sub(r"^curl -N (.*)$", r"curl -sN --max-time 20 \1 > listener.out &\nsleep 0.5", script, flags=re.M)
    workdir = str(tmp_path)
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", script + "\nsleep 0.5\nkill %1 || true\n"],
                         cwd=workdir, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    answers = out.stdout
    assert "Firegate-Write-State: pending" in answers
    assert "Firegate-From-Cache: true" in answers
    assert "Firegate-Has-Pending-Writes: true" in answers
    # the backend's 404 before the client is back online, then the document
    assert answers.count('"status":"NOT_FOUND"') == 1
    assert answers.rstrip().endswith("}") and "Los Angeles" in answers.rsplit('"status":"NOT_FOUND"', 1)[1]
    events = open(os.path.join(workdir, "listener.out"), encoding="utf-8").read()
    metadata = re.findall(r'"metadata":\{"fromCache":(true|false),"hasPendingWrites":(true|false)\}', events)
    # SF from the server; offline (fromCache); LA pending; back in sync; LA confirmed
    assert ("false", "false") in metadata
    assert ("true", "true") in metadata
    assert metadata[-1] == ("false", "false"), metadata
