"""The harness's exceptions, and gRPC status names by code (the spec gives errors as codes)."""


class HarnessError(Exception):
    """A bug in the harness or an unusable server (not a test failure)."""


class ServerGone(HarnessError):
    """The server stopped answering: the replay stops."""


class StepFailure(Exception):
    """The edge client did not do what the spec test expects."""


class UnsupportedValue(HarnessError, TypeError):
    """A Python value with no Firestore value. Both bases, because its two users raised
    these before they shared one converter: the replay a HarnessError, docs_support a
    TypeError."""


GRPC_CODES = {
    0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND", 6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION", 10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED",
    13: "INTERNAL", 14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}
