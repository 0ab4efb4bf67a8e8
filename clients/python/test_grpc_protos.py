"""Checks Firegate's own .proto files (Protos/) against the installed Python clients.

Protos/google/firestore/v1/*.proto, google/type/latlng.proto and google/rpc/status.proto are
compiled with grpc_tools.protoc into a FileDescriptorSet and compared with the descriptors that
google-cloud-firestore (proto-plus classes in google.cloud.firestore_v1.types) and
googleapis-common-protos carry:

- every message and enum of package google.firestore.v1 in the client exists in ours;
- each message has the same fields: names, numbers, types, labels, message/enum type names,
  oneof membership, proto3 `optional`, map entries; neither side has a field the other lacks;
- each enum has the same value names and numbers;
- the Firestore service has the RPCs (paths, streaming kinds, request and response types) that
  the client's gRPC transport calls.

No server is needed. On a mismatch the test prints every difference and fails; fix Protos/ and
rerun scripts/generate-protos.sh.
"""
import importlib
import keyword
import os
import pkgutil
import re
import tempfile
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROTOS = REPO / "Protos"
PACKAGE = "google.firestore.v1"
SERVICE = "google.firestore.v1.Firestore"

# The google-cloud-firestore version Protos/ were last checked with (named in failure reports).
CHECKED_WITH = "2.34.1"

# Messages we declare although the client lacks them (full name -> reason). Keep empty unless
# there is a reason (e.g. a newer API revision the installed client does not know yet).
EXTRA_MESSAGES_OK: dict[str, str] = {}
# Fields we declare although this client lacks them ((message, number) -> reason).
EXTRA_FIELDS_OK: dict[tuple[str, int], str] = {
    ("google.firestore.v1.Write", 5): "verify: the JS SDKs' own write.proto has it (a transaction's check of each "
                                      "document it read and did not write); googleapis' protos do not",
}



def _require(module):
    """Imports a dependency; a missing one skips the module locally but fails under CI."""
    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"{module} missing: pip install -r clients/python/requirements.txt", allow_module_level=True)


descriptor_pb2 = _require("google.protobuf.descriptor_pb2")
grpc_tools = _require("grpc_tools")
protoc = _require("grpc_tools.protoc")
_require("google.cloud.firestore_v1")

FDP = descriptor_pb2.FieldDescriptorProto
TYPE_NAMES = {v: k.removeprefix("TYPE_").lower() for k, v in FDP.Type.items()}
LABEL_NAMES = {v: k.removeprefix("LABEL_").lower() for k, v in FDP.Label.items()}


# ---------------------------------------------------------------- descriptor sets


def _our_files():
    """Compiles Protos/ with grpc_tools' protoc; returns FileDescriptorProtos (no imports)."""
    sources = sorted(str(p.relative_to(PROTOS)) for p in PROTOS.rglob("*.proto"))
    assert sources, f"no .proto files under {PROTOS}"
    wkt = Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ours.pb"
        rc = protoc.main(["protoc", f"-I{PROTOS}", f"-I{wkt}", f"--descriptor_set_out={out}", *sources])
        assert rc == 0, f"protoc failed on Protos/ (exit {rc}); see its messages above"
        fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    return list(fds.file)


def _client_files():
    """The FileDescriptorProtos of package google.firestore.v1 that google-cloud-firestore
    registers (via its proto-plus classes), plus google.type.LatLng and google.rpc.Status."""
    import proto
    import google.cloud.firestore_v1.types as types_pkg
    from google.rpc import status_pb2
    from google.type import latlng_pb2

    files = {}
    for info in pkgutil.iter_modules(types_pkg.__path__):
        module = importlib.import_module(f"{types_pkg.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, proto.Message) and value is not proto.Message:
                fd = value.pb().DESCRIPTOR.file
                if fd.package == PACKAGE:
                    files[fd.name] = fd
    for fd in (latlng_pb2.DESCRIPTOR, status_pb2.DESCRIPTOR):
        files[fd.name] = fd
    protos = []
    for fd in files.values():
        p = descriptor_pb2.FileDescriptorProto()
        fd.CopyToProto(p)
        protos.append(p)
    return protos


def _index(files, packages):
    """full name -> DescriptorProto / EnumDescriptorProto, nested types flattened."""
    messages, enums = {}, {}

    def walk(prefix, msg):
        name = f"{prefix}.{msg.name}"
        messages[name] = msg
        for e in msg.enum_type:
            enums[f"{name}.{e.name}"] = e
        for n in msg.nested_type:
            walk(name, n)

    for f in files:
        if f.package not in packages:
            continue
        for m in f.message_type:
            walk(f.package, m)
        for e in f.enum_type:
            enums[f"{f.package}.{e.name}"] = e
    return messages, enums


# ---------------------------------------------------------------- comparison


def _field_name(name: str) -> str:
    # proto-plus renames fields that are Python keywords: `from` becomes `from_`.
    if name.endswith("_") and keyword.iskeyword(name[:-1]):
        return name[:-1]
    return name


def _fields(msg):
    """number -> comparable description of the field."""
    out = {}
    for f in msg.field:
        oneof = msg.oneof_decl[f.oneof_index].name if f.HasField("oneof_index") else None
        out[f.number] = {
            "name": _field_name(f.name),
            "label": LABEL_NAMES[f.label],
            "type": TYPE_NAMES[f.type],
            "type_name": f.type_name or None,
            "oneof": oneof,
            "proto3_optional": f.proto3_optional,
        }
    return out


def _compare_message(name, ref, ours, problems):
    if ref.options.map_entry != ours.options.map_entry:
        problems.append(f"{name}: map_entry client={ref.options.map_entry} ours={ours.options.map_entry}")
    ref_fields, our_fields = _fields(ref), _fields(ours)
    for number in sorted(set(ref_fields) | set(our_fields)):
        r, o = ref_fields.get(number), our_fields.get(number)
        if o is None:
            problems.append(f"{name}: missing field {number} {r}")
        elif r is None:
            if (name, number) not in EXTRA_FIELDS_OK:
                problems.append(f"{name}: field {number} {o['name']!r} is not in the client")
        else:
            for key in r:
                if r[key] != o[key]:
                    problems.append(f"{name}.{r['name']} (= {number}): {key} client={r[key]!r} ours={o[key]!r}")
    ref_oneofs = {d.name for d in ref.oneof_decl}
    our_oneofs = {d.name for d in ours.oneof_decl}
    if ref_oneofs != our_oneofs:
        problems.append(f"{name}: oneofs client={sorted(ref_oneofs)} ours={sorted(our_oneofs)}")


def _compare_enum(name, ref, ours, problems):
    r = {v.name: v.number for v in ref.value}
    o = {v.name: v.number for v in ours.value}
    if r != o:
        for key in sorted(set(r) | set(o)):
            if r.get(key) != o.get(key):
                problems.append(f"{name}.{key}: client={r.get(key)} ours={o.get(key)}")


def _fail(problems, what):
    if problems:
        version = metadata.version("google-cloud-firestore")
        report = "\n  ".join(problems)
        print(f"{what}: {len(problems)} difference(s)\n  {report}")
        hint = "" if version == CHECKED_WITH else f" (Protos/ were checked with {CHECKED_WITH})"
        pytest.fail(
            f"Protos/ differ from google-cloud-firestore {version}{hint} / googleapis-common-protos "
            f"{metadata.version('googleapis-common-protos')} ({what}):\n  {report}",
            pytrace=False,
        )


# ---------------------------------------------------------------- tests


def test_messages_match_client_descriptors():
    packages = {PACKAGE, "google.type", "google.rpc"}
    ref_messages, ref_enums = _index(_client_files(), packages)
    our_messages, our_enums = _index(_our_files(), packages)
    # Only what the clients describe for google.type / google.rpc (LatLng, Status) is compared.
    assert f"{PACKAGE}.Value" in ref_messages and "google.type.LatLng" in ref_messages, "client descriptors not found"

    problems = []
    for name in sorted(ref_messages):
        if name not in our_messages:
            problems.append(f"missing message {name}")
        else:
            _compare_message(name, ref_messages[name], our_messages[name], problems)
    for name in sorted(set(our_messages) - set(ref_messages)):
        if name not in EXTRA_MESSAGES_OK:
            problems.append(f"message {name} is not in the client (add it to EXTRA_MESSAGES_OK with a reason?)")
    for name in sorted(ref_enums):
        if name not in our_enums:
            problems.append(f"missing enum {name}")
        else:
            _compare_enum(name, ref_enums[name], our_enums[name], problems)
    for name in sorted(set(our_enums) - set(ref_enums)):
        problems.append(f"enum {name} is not in the client")
    _fail(problems, "messages")


class _Recorder:
    """Stands in for the transport's gRPC channel and records the stubs it asks for."""

    def __init__(self):
        self.calls = {}

    def _record(kind):
        def make(self, path, request_serializer=None, response_deserializer=None, **_):
            self.calls[path] = (kind, request_serializer, response_deserializer)
            return lambda *a, **k: None

        return make

    unary_unary = _record("unary_unary")
    unary_stream = _record("unary_stream")
    stream_unary = _record("stream_unary")
    stream_stream = _record("stream_stream")


def _message_name(fn):
    """Full proto name of the message a (de)serializer belongs to (proto-plus or _pb2)."""
    owner = getattr(fn, "__self__", None)
    if owner is not None and hasattr(owner, "pb"):
        return owner.pb().DESCRIPTOR.full_name
    if owner is not None and hasattr(owner, "DESCRIPTOR"):
        return owner.DESCRIPTOR.full_name
    return repr(fn)


def test_service_matches_client_transport():
    grpc = _require("grpc")
    from google.cloud.firestore_v1.services.firestore.transports.grpc import FirestoreGrpcTransport

    ours = {}
    for f in _our_files():
        for s in f.service:
            if f"{f.package}.{s.name}" == SERVICE:
                for m in s.method:
                    kind = ("stream" if m.client_streaming else "unary") + "_" + ("stream" if m.server_streaming else "unary")
                    ours[f"/{SERVICE}/{m.name}"] = (kind, m.input_type.lstrip("."), m.output_type.lstrip("."))
    assert ours, f"service {SERVICE} not found in Protos/"

    channel = grpc.insecure_channel("127.0.0.1:9")  # lazy: never connects
    try:
        transport = FirestoreGrpcTransport(channel=channel)
        recorder = _Recorder()
        transport._logged_channel = recorder
        transport._stubs = {}
        for attr, member in vars(FirestoreGrpcTransport).items():
            if isinstance(member, property) and not attr.startswith("_"):
                try:
                    getattr(transport, attr)
                except Exception:
                    pass
    finally:
        channel.close()

    client = {
        path: (kind, _message_name(req), _message_name(resp))
        for path, (kind, req, resp) in recorder.calls.items()
        if path.startswith(f"/{SERVICE}/")
    }
    assert client, "recorded no Firestore stubs from the client transport"
    problems = []
    for path in sorted(set(client) | set(ours)):
        c, o = client.get(path), ours.get(path)
        if o is None:
            problems.append(f"missing rpc {path} {c}")
        elif c is None:
            problems.append(f"rpc {path} is not in the client transport")
        elif c != o:
            problems.append(f"rpc {path}: client={c} ours={o}")
    _fail(problems, "service")


def test_protos_have_no_google_api_or_swift_options():
    """Generated Swift names must stay Google_Firestore_V1_*: no swift_prefix, no google/api."""
    problems = []
    for path in sorted(PROTOS.rglob("*.proto")):
        text = path.read_text()
        if re.search(r'import\s+"google/api/', text):
            problems.append(f"{path.relative_to(REPO)} imports google/api")
        if "swift_prefix" in text:
            problems.append(f"{path.relative_to(REPO)} sets swift_prefix")
    _fail(problems, "options")
