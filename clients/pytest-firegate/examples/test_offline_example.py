"""A complete example of pytest-firegate: `pip install ./clients/pytest-firegate`, then
`pytest clients/pytest-firegate/examples` (with FIREGATE_BIN, FIREGATE_URL or firegate on PATH)."""
import pytest


def test_a_write_made_offline_waits_in_the_clients_queue_until_it_reconnects(firegate, firegate_client):
    with firegate_client.offline():
        written = firegate_client.set("cities/LA", {"name": "Los Angeles", "population": 3_900_000})
        assert written.headers["Firegate-Write-State"] == "pending"
        cached = firegate_client.get("cities/LA", source="cache")
        assert cached.headers["Firegate-Has-Pending-Writes"] == "true"
        assert firegate.get("cities/LA").status_code == 404, "the server has not seen it"
        assert len(firegate_client.pending_writes()) == 1
    firegate_client.wait_for_pending_writes()
    assert firegate.get("cities/LA").json()["fields"]["name"] == {"stringValue": "Los Angeles"}


def test_each_test_starts_empty(firegate):
    assert firegate.get("cities/LA").status_code == 404


def test_a_real_client_is_refused_while_its_connections_are_switched_off(firegate, monkeypatch):
    firestore = pytest.importorskip("google.cloud.firestore")
    exceptions = pytest.importorskip("google.api_core.exceptions")
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", firegate.url.removeprefix("http://"))
    db = firestore.Client(project=firegate.project)
    db.collection("cities").document("SF").set({"name": "San Francisco"})
    with firegate.offline(project=firegate.project):
        with pytest.raises(exceptions.ServiceUnavailable):
            db.collection("cities").document("SF").get(retry=None, timeout=5)
    assert db.collection("cities").document("SF").get().to_dict() == {"name": "San Francisco"}
