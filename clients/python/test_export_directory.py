"""The Firebase CLI's export directory (docs/export-format.md), checked against the official
Firestore emulator both ways: an export it writes is imported by Firegate, and an export Firegate
writes is seeded into it, with every value type, subcollections and the RTDB's files; a damaged
export stops the import naming the file and the record, and loses nothing."""

import json
import os
import struct
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import requests

import oracle
from conftest import _binary, start_server, stop_server

FIELDS = {
    "null": {"nullValue": None}, "yes": {"booleanValue": True}, "no": {"booleanValue": False},
    "int": {"integerValue": "-42"}, "big": {"integerValue": "9223372036854775807"},
    "double": {"doubleValue": -0.5}, "nan": {"doubleValue": "NaN"}, "inf": {"doubleValue": "-Infinity"},
    "text": {"stringValue": "héllo ✓"}, "long": {"stringValue": "x" * 2000}, "bytes": {"bytesValue": "AP8K"},
    "when": {"timestampValue": "2009-02-13T23:31:30.123456Z"},
    "where": {"geoPointValue": {"latitude": 48.85, "longitude": 2.35}},
    "list": {"arrayValue": {"values": [{"integerValue": "1"}, {"stringValue": "two"},
                                       {"mapValue": {"fields": {"k": {"booleanValue": False}}}}]}},
    "empty": {"arrayValue": {}}, "emptyMap": {"mapValue": {}},
    "map": {"mapValue": {"fields": {"inner": {"mapValue": {"fields": {"deep": {"integerValue": "3"}, "list": {"arrayValue": {}}}}},
                                    "s": {"stringValue": "x"}}}},
    "vector": {"mapValue": {"fields": {"__type__": {"stringValue": "__vector__"},
                                       "value": {"arrayValue": {"values": [{"doubleValue": 1.0}, {"doubleValue": 2.5}]}}}}},
}
PATHS = ["users/u1", "users/u1/posts/p1", "users/u1/posts/p1/likes/l1", "users/u2", "other/o1"]


def fields_for(project, path):
    fields = dict(FIELDS)
    fields["ref"] = {"referenceValue": f"projects/{project}/databases/(default)/documents/{PATHS[(PATHS.index(path) + 1) % len(PATHS)]}"}
    fields["path"] = {"stringValue": path}
    return fields


def fill(base, project):
    for path in PATHS:
        answer = requests.patch(f"{base}/v1/projects/{project}/databases/(default)/documents/{path}", json={"fields": fields_for(project, path)},
                                headers={"Authorization": "Bearer owner"}, timeout=30)
        assert answer.status_code == 200, answer.text


def documents(base, project):
    out = {}
    for path in PATHS:
        answer = requests.get(f"{base}/v1/projects/{project}/databases/(default)/documents/{path}", headers={"Authorization": "Bearer owner"}, timeout=30)
        assert answer.status_code == 200, (path, answer.text)
        out[path] = answer.json()["fields"]
    return out


def same(theirs, ours):
    """Every field equal, numbers compared as numbers (1.0 and 1 are one double)."""
    assert sorted(theirs) == sorted(ours)
    for path in theirs:
        for name in theirs[path]:
            assert oracle.numbers_close(theirs[path][name], ours[path][name]), (path, name, theirs[path][name], ours[path][name])


def emulator_export(emulator, project, folder: Path, name="firestore_export"):
    folder.mkdir(parents=True, exist_ok=True)
    answer = requests.post(f"{emulator.base}/emulator/v1/projects/{project}:export",
                           json={"database": f"projects/{project}/databases/(default)", "export_directory": str(folder), "export_name": name}, timeout=60)
    assert answer.status_code == 200, answer.text
    return folder / name


def cli_layout(tmp_path, firestore_folder: Path, namespaces: dict):
    """A directory as `firebase emulators:export` leaves it, around the emulator's Firestore part."""
    root = tmp_path / "seed"
    (root / "database_export").mkdir(parents=True)
    firestore_folder.rename(root / "firestore_export")
    for name, value in namespaces.items():
        (root / "database_export" / f"{name}.json").write_text(json.dumps(value, separators=(",", ":")))
    (root / "firebase-export-metadata.json").write_text(json.dumps({
        "version": "15.28.1",
        "firestore": {"version": "1.22.0", "path": "firestore_export", "metadata_file": "firestore_export/firestore_export.overall_export_metadata"},
        "database": {"version": "4.11.2", "path": "database_export"},
    }, indent=2))
    return root


def test_an_export_the_official_emulator_wrote_is_imported_whole(firestore_emulator, tmp_path):
    project = f"demo-exp-{uuid.uuid4().hex[:8]}"
    fill(firestore_emulator.base, project)
    exported = emulator_export(firestore_emulator, project, tmp_path / "emulator")
    # The RTDB's files as the database emulator writes them: dense integer keys come as arrays.
    seed = cli_layout(tmp_path, exported, {project: {"rooms": {"r1": {"n": 1}}, "list": ["a", "b", "c"]},
                                           f"{project}-default-rtdb": {"x": True}})
    proc, base = start_server("--import", seed, "--project", project)
    try:
        same(documents(firestore_emulator.base, project), documents(base, project))
        assert requests.get(f"{base}/list/1.json?ns={project}", timeout=10).json() == "b", "an array is stored as keys 0…n-1"
        assert requests.get(f"{base}/rooms/r1/n.json?ns={project}", timeout=10).json() == 1
        assert requests.get(f"{base}/x.json?ns={project}-default-rtdb", timeout=10).json() is True
    finally:
        stop_server(proc)


def test_a_production_export_folder_imports_as_the_cli_takes_it(firestore_emulator, tmp_path):
    # `gcloud firestore export` leaves a folder holding <name>.overall_export_metadata: --import takes
    # that folder (production zero-pads its files to whole 32 KiB blocks).
    project = f"demo-prod-{uuid.uuid4().hex[:8]}"
    fill(firestore_emulator.base, project)
    exported = emulator_export(firestore_emulator, project, tmp_path / "bucket", name="2024-01-22T10:11:12_34567")
    for output in (exported / "all_namespaces" / "all_kinds").glob("output-*"):
        data = output.read_bytes()
        output.write_bytes(data + bytes(-len(data) % 32768))
    proc, base = start_server("--import", exported, "--project", project)
    try:
        same(documents(firestore_emulator.base, project), documents(base, project))
    finally:
        stop_server(proc)


def test_firegates_export_is_what_the_official_emulator_seeds_from(firestore_emulator, tmp_path):
    project = f"demo-back-{uuid.uuid4().hex[:8]}"
    fill(firestore_emulator.base, project)
    target = tmp_path / "export"
    script = ("import sys, json, urllib.request as u, os\n"
              "sys.path.insert(0, %r)\n"
              "from test_export_directory import fill\n"
              "fill(os.environ['FIREGATE_URL'], os.environ['GCLOUD_PROJECT'])\n"
              "r = u.Request(os.environ['FIREGATE_URL'] + '/rooms.json?ns=' + os.environ['GCLOUD_PROJECT'], data=b'{\"r1\":{\"n\":1}}', method='PUT')\n"
              "u.urlopen(r)\n") % str(Path(__file__).parent)
    (tmp_path / "fill.py").write_text(script)
    (tmp_path / "firebase.json").write_text(json.dumps({"firestore": {}, "database": {}, "emulators": {
        "firestore": {"port": 0}, "database": {"port": 0}, "hub": {"port": 0}}}))
    done = subprocess.run([_binary(), "exec", "-P", project, "--export-on-exit", str(target), "--log-level", "warning", "--",
                           sys.executable, str(tmp_path / "fill.py")], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    metadata = json.loads((target / "firebase-export-metadata.json").read_text())
    assert metadata["firestore"]["metadata_file"] == "firestore_export/firestore_export.overall_export_metadata"
    assert metadata["database"]["path"] == "database_export"
    assert json.loads((target / "database_export" / f"{project}.json").read_text()) == {"rooms": {"r1": {"n": 1}}}
    seeded = oracle.OfficialEmulator(oracle.emulator_binary(),
                                     f"--seed_from_export={target / metadata['firestore']['metadata_file']}")
    try:
        same(documents(firestore_emulator.base, project), documents(seeded.base, project))
    finally:
        seeded.stop()
    # And the directory comes back into Firegate as it went.
    proc, base = start_server("--import", target, "--project", project)
    try:
        same(documents(firestore_emulator.base, project), documents(base, project))
        assert requests.get(f"{base}/rooms/r1/n.json?ns={project}", timeout=10).json() == 1
    finally:
        stop_server(proc)


# --- damaged exports -------------------------------------------------------------------------

def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def varint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def field(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def entity(project: str, path: list, properties: bytes) -> bytes:
    elements = b"".join(b"\x0b" + field(2, kind.encode()) + field(4, name.encode()) + b"\x0c" for kind, name in path)
    key = field(13, f"dev~{project}".encode()) + field(14, elements)
    return field(13, key) + properties + field(16, b"\x0b" + field(2, path[0][0].encode()) + field(4, path[0][1].encode()) + b"\x0c")


def text_property(name: str, value: bytes) -> bytes:
    return field(15, field(3, name.encode()) + b"\x20\x00" + field(5, field(3, value)))


@pytest.fixture
def exported(tmp_path):
    """An export Firegate wrote (two documents), and the server that holds them."""
    project = f"demo-dmg-{uuid.uuid4().hex[:8]}"
    proc, base = start_server("--project", project)
    fill(base, project)
    (tmp_path / "out").mkdir()
    answer = requests.post(f"{base}/emulator/v1/projects/{project}:export",
                           json={"database": f"projects/{project}/databases/(default)", "export_directory": str(tmp_path / "out")}, timeout=30)
    assert answer.status_code == 200, answer.text
    yield project, base, tmp_path / "out" / "firestore_export"
    stop_server(proc)


def import_into(base, project, folder):
    return requests.post(f"{base}/emulator/v1/projects/{project}:import",
                         json={"database": f"projects/{project}/databases/(default)", "export_directory": str(folder)}, timeout=30)


@pytest.mark.parametrize("damage", ["truncated", "checksum", "unknown field", "too large", "not utf-8"])
def test_a_damaged_export_stops_the_import_naming_the_file_and_record_and_loses_nothing(exported, damage):
    project, base, folder = exported
    output = folder / "all_namespaces" / "all_kinds" / "output-0"
    data = output.read_bytes()
    record = None
    if damage == "truncated":
        output.write_bytes(data[:-5])
        expected = "truncated"
    elif damage == "checksum":
        output.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
        expected = "bad checksum"
    elif damage == "unknown field":
        record = entity(project, [("c", "x")], field(99, b"?"))
        expected = "unknown field 99"
    elif damage == "too large":
        record = entity(project, [("c", "big")], text_property("s", b"x" * (1024 * 1024 + 10)))
        expected = "exceeds the maximum allowed size"
    else:
        record = entity(project, [("c", "bad")], text_property("s", b"\xff\xfe"))
        expected = "not UTF-8"
    if record is not None:
        output.write_bytes(data + frame_at(record, len(data)))
    answer = import_into(base, project, folder)
    assert answer.status_code == 400, answer.text
    message = answer.json()["error"]["message"]
    assert str(output) in message and "record" in message and expected in message, message
    # Nothing changed.
    assert documents(base, project)["users/u1"]["path"] == {"stringValue": "users/u1"}
    # At start, the same export stops the server before it serves, saying why.
    started = subprocess.run([_binary(), "serve", "--in-memory", "--port", "0", "--import", str(folder), "--project", project],
                             capture_output=True, text=True, timeout=60)
    assert started.returncode != 0 and expected in started.stderr, started.stderr


def frame_at(record: bytes, offset: int) -> bytes:
    """LevelDB framing of one record appended at `offset` of a file: FIRST, MIDDLE…, LAST."""
    out = b""
    rest = record
    first = True
    position = offset
    while True:
        left = 32768 - position % 32768
        if left < 7:
            out += bytes(left)
            position += left
            continue
        chunk = rest[:left - 7]
        rest = rest[len(chunk):]
        kind = (1 if not rest else 2) if first else (4 if not rest else 3)
        crc = crc32c(bytes([kind]) + chunk)
        masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
        out += struct.pack("<IHB", masked, len(chunk), kind) + chunk
        position += 7 + len(chunk)
        first = False
        if not rest:
            return out


def test_the_export_verbs_refuse_what_the_emulator_refuses(exported, tmp_path):
    project, base, _ = exported
    missing = requests.post(f"{base}/emulator/v1/projects/{project}:export",
                            json={"database": f"projects/{project}/databases/(default)", "export_directory": str(tmp_path / "nowhere")}, timeout=10)
    assert missing.status_code == 400 and missing.json()["error"]["status"] == "FAILED_PRECONDITION"
    other = requests.post(f"{base}/emulator/v1/projects/{project}:export",
                          json={"database": "projects/someone-else/databases/(default)", "export_directory": str(tmp_path)}, timeout=10)
    assert other.status_code == 400
    empty = import_into(base, project, tmp_path / "nowhere")
    assert empty.status_code == 400 and "does not exist" in empty.json()["error"]["message"]
