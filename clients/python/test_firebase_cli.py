"""`firegate exec` and `emulators:start` as drop-ins for the Firebase CLI's commands
(docs/firebase-cli.md): a project laid out as the CLI expects — firebase.json, .firebaserc,
rules files — runs its command against Firegate, which listens on the ports firebase.json
names, runs the hub, gives the command the CLI's variables and exits with its status."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from conftest import _binary, _free_port

FIRESTORE_RULES = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /open/{doc} { allow read, write: if true; }
    match /locked/{doc} { allow read: if true; allow write: if false; }
  }
}
"""

DATABASE_RULES = json.dumps({"rules": {"open": {".read": True, ".write": True}, "locked": {".read": True, ".write": False}}})

# What the command checks, from inside `firegate exec`: the variables, the hub, both services on
# their ports, and the rules files of firebase.json in force. Exits with EXIT_WITH.
CHECKS = r'''
import json, os, sys, urllib.request, urllib.error

def call(method, url, body=None, token="owner"):
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")

env = os.environ
report = {name: env.get(name) for name in ["GCLOUD_PROJECT", "FIREBASE_CONFIG", "FIRESTORE_EMULATOR_HOST",
          "FIREBASE_FIRESTORE_EMULATOR_ADDRESS", "FIREBASE_DATABASE_EMULATOR_HOST", "FIREBASE_EMULATOR_HUB", "FIREGATE_URL"]}
project = env["GCLOUD_PROJECT"]
report["emulators"] = call("GET", "http://%s/emulators" % env["FIREBASE_EMULATOR_HUB"], token=None)[1]
documents = "http://%s/v1/projects/%s/databases/(default)/documents" % (env["FIRESTORE_EMULATOR_HOST"], project)
report["open_write"] = call("PATCH", documents + "/open/a", {"fields": {"n": {"integerValue": "1"}}}, token=None)[0]
report["locked_write"] = call("PATCH", documents + "/locked/a", {"fields": {"n": {"integerValue": "1"}}}, token=None)[0]
report["open_read"] = call("GET", documents + "/open/a", token=None)[1]["fields"]
tree = "http://%s" % env["FIREBASE_DATABASE_EMULATOR_HOST"]
report["tree_open"] = call("PUT", tree + "/open/x.json?ns=" + project, 5, token=None)[0]
report["tree_locked"] = call("PUT", tree + "/locked/x.json?ns=" + project, 5, token=None)[0]
# What the Admin SDK writes under <project>, a client SDK reads under <project>-default-rtdb.
call("PUT", tree + "/open/shared.json?ns=" + project, {"by": "admin"}, token=None)
report["tree_alias"] = call("GET", tree + "/open/shared.json?ns=" + project + "-default-rtdb", token=None)[1]
call("PUT", tree + "/open/back.json?ns=" + project + "-default-rtdb", 1, token=None)
report["tree_alias_back"] = call("GET", tree + "/open/back.json?ns=" + project, token=None)[1]
print("REPORT " + json.dumps(report), flush=True)
sys.exit(int(env.get("EXIT_WITH", "0")))
'''


def project_folder(tmp_path, ports=None, rc=True):
    """A project as `firebase init` leaves it, with free ports."""
    ports = ports or {"firestore": _free_port(), "database": _free_port(), "hub": _free_port()}
    (tmp_path / "firestore.rules").write_text(FIRESTORE_RULES)
    (tmp_path / "database.rules.json").write_text(DATABASE_RULES)
    (tmp_path / "checks.py").write_text(CHECKS)
    config = {
        "firestore": {"rules": "firestore.rules"},
        "database": {"rules": "database.rules.json"},
        "emulators": {name: {"port": port} for name, port in ports.items()} | {"ui": {"enabled": False}},
    }
    (tmp_path / "firebase.json").write_text(json.dumps(config, indent=2))
    if rc:
        (tmp_path / ".firebaserc").write_text('{\n  // as firebase use leaves it\n  "projects": {"default": "demo-cli"}\n}\n')
    return ports


def run(args, cwd, env=None, timeout=60):
    return subprocess.run([_binary(), *args], cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout)


def report_of(stdout):
    line = next(line for line in stdout.splitlines() if line.startswith("REPORT "))
    return json.loads(line[len("REPORT "):])


def listening(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_a_project_laid_out_for_the_cli_runs_its_command_with_the_clis_variables_and_ports(tmp_path):
    ports = project_folder(tmp_path)
    done = run(["emulators:exec", f"{sys.executable} checks.py", "--log-level", "warning"], tmp_path, env={"EXIT_WITH": "0"})
    assert done.returncode == 0, done.stderr
    report = report_of(done.stdout)
    assert report["GCLOUD_PROJECT"] == "demo-cli", "the project of .firebaserc"
    assert json.loads(report["FIREBASE_CONFIG"]) == {"projectId": "demo-cli", "storageBucket": "demo-cli.appspot.com",
                                                     "databaseURL": "https://demo-cli.firebaseio.com"}
    assert report["FIRESTORE_EMULATOR_HOST"] == report["FIREBASE_FIRESTORE_EMULATOR_ADDRESS"] == f"127.0.0.1:{ports['firestore']}"
    assert report["FIREBASE_DATABASE_EMULATOR_HOST"] == f"127.0.0.1:{ports['database']}"
    assert report["FIREBASE_EMULATOR_HUB"] == f"127.0.0.1:{ports['hub']}"
    assert report["FIREGATE_URL"] == f"http://127.0.0.1:{ports['firestore']}"
    emulators = report["emulators"]
    assert sorted(emulators) == ["database", "firestore", "hub"]
    for name in ("firestore", "database", "hub"):
        assert emulators[name]["host"] == "127.0.0.1" and emulators[name]["port"] == ports[name]
        assert emulators[name]["listen"] == [{"address": "127.0.0.1", "family": "IPv4", "port": ports[name]}]
    # firebase.json's rules files are in force on both services.
    assert report["open_write"] == 200 and report["locked_write"] == 403
    assert report["open_read"] == {"n": {"integerValue": "1"}}
    assert report["tree_open"] == 200 and report["tree_locked"] == 401
    assert report["tree_alias"] == {"by": "admin"} and report["tree_alias_back"] == 1, "one database under both names"
    # The servers are gone once the command is.
    assert not any(listening(port) for port in ports.values())


def test_the_commands_exit_status_is_firegates(tmp_path):
    project_folder(tmp_path)
    done = run(["exec", "--log-level", "warning", "--", sys.executable, "checks.py"], tmp_path, env={"EXIT_WITH": "7"})
    assert done.returncode == 7, done.stderr
    assert report_of(done.stdout)["open_write"] == 200, "several arguments run as they are, without a shell"
    failed = run(["exec", "--log-level", "warning", "--", "sh", "-c", "exit 3"], tmp_path)
    assert failed.returncode == 3


def test_project_flag_names_an_alias_or_an_id_and_without_a_config_the_defaults_hold(tmp_path):
    project_folder(tmp_path)
    (tmp_path / ".firebaserc").write_text('{"projects": {"default": "demo-cli", "other": "demo-other"}}')
    done = run(["exec", "-P", "other", "--log-level", "warning", "--", sys.executable, "checks.py"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert report_of(done.stdout)["GCLOUD_PROJECT"] == "demo-other"
    # No firebase.json: the CLI's built-in config — Firestore and the database on 8080 and 9000 —
    # unless those are taken here, so only ask what the command is told about the project.
    bare = tmp_path / "bare"
    bare.mkdir()
    script = "import os; print('PROJECT', os.environ.get('GCLOUD_PROJECT'), os.environ['FIRESTORE_EMULATOR_HOST'])"
    if not listening(8080) and not listening(9000) and not listening(4400):
        plain = run(["exec", "--log-level", "warning", "--", sys.executable, "-c", script], bare)
        assert plain.returncode == 0, plain.stderr
        assert "PROJECT None 127.0.0.1:8080" in plain.stdout, "demo-no-project is not announced"


def test_a_taken_port_stops_the_start_naming_it_and_a_taken_hub_port_moves_up(tmp_path):
    ports = project_folder(tmp_path)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", ports["firestore"]))
        holder.listen()
        done = run(["exec", "--log-level", "warning", "--", "true"], tmp_path)
        assert done.returncode != 0
        assert f"port {ports['firestore']}" in done.stderr and "firestore" in done.stderr
    config = json.loads((tmp_path / "firebase.json").read_text())
    del config["emulators"]["hub"]  # the default 4400, which moves up when taken
    (tmp_path / "firebase.json").write_text(json.dumps(config))
    hub = socket.socket()
    try:
        try:
            hub.bind(("127.0.0.1", 4400))
            hub.listen()
        except OSError:
            pass  # something here holds 4400 already: the hub moves all the same
        script = "import os; print('HUB', os.environ['FIREBASE_EMULATOR_HUB'])"
        moved = run(["exec", "--log-level", "warning", "--", sys.executable, "-c", script], tmp_path)
        assert moved.returncode == 0, moved.stderr
        hub_port = int(moved.stdout.split("HUB 127.0.0.1:")[1].split()[0])
        assert hub_port > 4400
    finally:
        hub.close()


def test_bad_flags_and_files_are_refused_with_the_reason(tmp_path):
    project_folder(tmp_path)
    unknown = run(["exec", "--only", "firestroe", "--", "true"], tmp_path)
    assert unknown.returncode != 0 and "firestroe" in unknown.stderr
    (tmp_path / "firebase.json").write_text('{"emulators": {"firestore": {"port": "eighty"}}}')
    bad_port = run(["exec", "--", "true"], tmp_path)
    assert bad_port.returncode != 0 and "emulators.firestore.port" in bad_port.stderr
    (tmp_path / "firebase.json").write_text("{ not json")
    broken = run(["exec", "--", "true"], tmp_path)
    assert broken.returncode != 0 and "firebase.json" in broken.stderr
    missing = run(["exec", "--"], tmp_path)
    assert missing.returncode != 0 and "command" in missing.stderr


def test_a_signal_reaches_the_command_and_the_servers_stop_after_it(tmp_path):
    ports = project_folder(tmp_path)
    marker = tmp_path / "got-signal"
    script = (
        "import signal, sys, time, pathlib\n"
        f"def stop(number, frame): pathlib.Path({str(marker)!r}).write_text(str(number)); sys.exit(5)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "print('READY', flush=True)\n"
        "time.sleep(60)\n"
    )
    (tmp_path / "waits.py").write_text(script)
    proc = subprocess.Popen([_binary(), "exec", "--log-level", "warning", "--", sys.executable, "waits.py"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "READY"
        assert listening(ports["firestore"]) and listening(ports["hub"])
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 5, "firegate exits with the command's status"
        assert marker.read_text() == str(int(signal.SIGTERM))
        assert not listening(ports["firestore"]) and not listening(ports["database"])
    finally:
        if proc.poll() is None:
            proc.kill()


def test_emulators_start_announces_readiness_and_stops_on_sigint(tmp_path):
    ports = project_folder(tmp_path)
    proc = subprocess.Popen([_binary(), "emulators:start", "--log-level", "warning"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "All emulators ready! It is now safe to connect your app." in line
        hub = requests.get(f"http://127.0.0.1:{ports['hub']}/", timeout=5).json()
        assert hub["port"] == ports["hub"] and hub["pid"] == proc.pid
        assert requests.get(f"http://127.0.0.1:{ports['hub']}/emulators", headers={"Origin": "http://localhost:3000"},
                            timeout=5).headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
        # Each port serves every surface, with one registry behind them.
        doc = f"/v1/projects/demo-cli/databases/(default)/documents/open/b"
        assert requests.patch(f"http://127.0.0.1:{ports['firestore']}{doc}", json={"fields": {}}, timeout=5).status_code == 200
        assert requests.get(f"http://127.0.0.1:{ports['database']}{doc}", timeout=5).status_code == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_export_on_exit_writes_the_export_directory_the_next_import_reads(tmp_path):
    project_folder(tmp_path)
    target = tmp_path / "seed"
    write = "import os, urllib.request as u; r = u.Request('http://%s/v1/projects/demo-cli/databases/(default)/documents/open/kept' % os.environ['FIRESTORE_EMULATOR_HOST'], data=b'{\"fields\":{\"v\":{\"stringValue\":\"yes\"}}}', method='PATCH'); u.urlopen(r)"
    first = run(["exec", "--export-on-exit", str(target), "--log-level", "warning", "--", sys.executable, "-c", write], tmp_path)
    assert first.returncode == 0, first.stderr
    assert (target / "firebase-export-metadata.json").exists() and (target / "firestore_export").is_dir()
    read = "import os, urllib.request as u; print('READ', u.urlopen('http://%s/v1/projects/demo-cli/databases/(default)/documents/open/kept' % os.environ['FIRESTORE_EMULATOR_HOST']).read().decode())"
    # `--import X --export-on-exit X`, the CLI's usual pair: read, then written back.
    second = run(["exec", "--import", str(target), "--export-on-exit", str(target), "--log-level", "warning", "--", sys.executable, "-c", read], tmp_path)
    assert second.returncode == 0, second.stderr
    assert '"stringValue": "yes"' in second.stdout or '"stringValue":"yes"' in second.stdout
    # An export holding both <project>.json and <project>-default-rtdb.json: one database, the
    # second's top-level keys laid over the first's.
    (target / "database_export" / "demo-cli.json").write_text('{"a":1,"b":{"x":1}}')
    (target / "database_export" / "demo-cli-default-rtdb.json").write_text('{"b":{"y":2},"c":3}')
    tree = ("import os, urllib.request as u; print('TREE', u.urlopen(u.Request('http://%s/.json?ns=demo-cli-default-rtdb' % "
            "os.environ['FIREBASE_DATABASE_EMULATOR_HOST'], headers={'Authorization': 'Bearer owner'})).read().decode())")
    merged = run(["exec", "--import", str(target), "--log-level", "warning", "--", sys.executable, "-c", tree], tmp_path)
    assert merged.returncode == 0, merged.stderr
    assert json.loads(merged.stdout.split("TREE ", 1)[1]) == {"a": 1, "b": {"y": 2}, "c": 3}
    # The first run of that pair, before X exists, imports nothing and writes X.
    fresh = tmp_path / "fresh"
    third = run(["exec", "--import", str(fresh), "--export-on-exit", str(fresh), "--log-level", "warning", "--", "true"], tmp_path)
    assert third.returncode == 0, third.stderr
    assert (fresh / "firebase-export-metadata.json").exists()
    here = run(["exec", "--export-on-exit", str(tmp_path), "--", "true"], tmp_path)
    assert here.returncode != 0 and "replaces" in here.stderr, "an export never replaces the folder it runs in"


def test_emulators_export_asks_the_running_suites_hub_for_the_export_directory(tmp_path):
    ports = project_folder(tmp_path)
    project = f"demo-cli-{os.getpid()}"
    (tmp_path / ".firebaserc").write_text(json.dumps({"projects": {"default": project}}))
    locator = Path(os.environ.get("TMPDIR") or "/tmp") / f"hub-{project}.json"
    nobody = run(["emulators:export", str(tmp_path / "early")], tmp_path)
    assert nobody.returncode != 0 and "No running suite" in nobody.stderr
    proc = subprocess.Popen([_binary(), "emulators:start", "--log-level", "warning"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "All emulators ready" in proc.stdout.readline()
        assert json.loads(locator.read_text()) == {"version": "firegate", "origins": [f"http://127.0.0.1:{ports['hub']}"], "pid": proc.pid}
        doc = f"http://127.0.0.1:{ports['firestore']}/v1/projects/{project}/databases/(default)/documents/open/e"
        assert requests.patch(doc, json={"fields": {"n": {"integerValue": "5"}}}, timeout=5).status_code == 200
        assert requests.put(f"http://127.0.0.1:{ports['database']}/open/t.json?ns={project}", json=7, timeout=5).status_code == 200
        target = tmp_path / "exported"
        done = run(["emulators:export", str(target)], tmp_path)
        assert done.returncode == 0, done.stderr
        assert (target / "firestore_export" / "firestore_export.overall_export_metadata").exists()
        assert json.loads((target / "database_export" / f"{project}.json").read_text()) == {"open": {"t": 7}}
        refused = run(["emulators:export", str(target)], tmp_path)
        assert refused.returncode != 0 and "--force" in refused.stderr, "a folder that is not empty needs --force"
        assert run(["emulators:export", "--force", str(target)], tmp_path).returncode == 0
        # The hub's own route, as the CLI calls it.
        bad = requests.post(f"http://127.0.0.1:{ports['hub']}/_admin/export", json={"path": "relative"}, timeout=5)
        assert bad.status_code == 400
        direct = requests.post(f"http://127.0.0.1:{ports['hub']}/_admin/export", json={"path": str(tmp_path / "direct"), "initiatedBy": "test"}, timeout=30)
        assert direct.status_code == 200 and direct.json() == {"message": "OK"}
        assert (tmp_path / "direct" / "firebase-export-metadata.json").exists()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        assert not locator.exists(), "the locator goes with the suite"
        # The export comes back in with --import.
        script = f"import os, urllib.request as u; print('N', u.urlopen('{doc}').read().decode())"
        again = run(["exec", "--import", str(target), "--log-level", "warning", "--", sys.executable, "-c", script], tmp_path)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout.split("N ", 1)[1])["fields"] == {"n": {"integerValue": "5"}}
    finally:
        if proc.poll() is None:
            proc.kill()


def test_database_targets_of_firebaserc_name_their_instances_and_one_database_has_one_ruleset(tmp_path):
    ports = project_folder(tmp_path)
    (tmp_path / "closed.rules.json").write_text(json.dumps({"rules": {".read": True, ".write": False}}))
    (tmp_path / "open.rules.json").write_text(json.dumps({"rules": {".read": True, ".write": True}}))
    config = json.loads((tmp_path / "firebase.json").read_text())
    config["database"] = [{"target": "main", "rules": "closed.rules.json"}, {"instance": "demo-cli-other", "rules": "open.rules.json"}]
    (tmp_path / "firebase.json").write_text(json.dumps(config))
    (tmp_path / ".firebaserc").write_text(json.dumps({"projects": {"default": "demo-cli"},
                                                      "targets": {"demo-cli": {"database": {"main": ["demo-cli-default-rtdb"]}}}}))
    script = (
        "import os, urllib.request as u, urllib.error as e\n"
        "def put(ns):\n"
        "    try:\n"
        "        return u.urlopen(u.Request('http://%s/x.json?ns=%s' % (os.environ['FIREBASE_DATABASE_EMULATOR_HOST'], ns), data=b'1', method='PUT')).status\n"
        "    except e.HTTPError as error:\n"
        "        return error.code\n"
        "print('STATUS', put('demo-cli-default-rtdb'), put('demo-cli'), put('demo-cli-other'))\n"
    )
    done = run(["exec", "--log-level", "warning", "--", sys.executable, "-c", script], tmp_path)
    assert done.returncode == 0, done.stderr
    # Target main is demo-cli-default-rtdb, whose rules are the closed ones — under both of its names.
    assert done.stdout.split("STATUS ", 1)[1].split() == ["401", "401", "200"]
