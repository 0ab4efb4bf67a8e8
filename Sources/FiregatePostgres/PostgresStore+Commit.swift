import FiregateModel
import FiregateStore
import Foundation
import PostgresNIO

/// The owner's write path: a run of units becomes one fenced commit.
///
/// Documents and the log go in one statement (a data-modifying CTE over arrays: one round trip,
/// no savepoints), whose first part moves each scope's head from the `seq` this replica's
/// memory holds to the new one, only where `owner_epoch` is still this replica's; the rows and
/// log rows of a scope that fails that check are not written. Tree batches add their row
/// statements in the same transaction. A scope fenced off fails its units UNAVAILABLE and is
/// forgotten; the other units of the run commit (after a rollback and a second try, when they
/// shared a transaction with it).
extension PostgresStore {
    func commit(_ units: [PostgresCommitQueue.Unit]) {
        var remaining = units
        while !remaining.isEmpty {
            var refused: [String: FiregateError] = [:]
            for scope in Set(remaining.flatMap(CommitPlan.scopes)) where leases.hold(scope).epoch == nil {
                do { try acquire(scope) } catch { refused[scope] = error }
            }
            remaining = failing(remaining, refused)
            guard !remaining.isEmpty else { return }
            let plan = CommitPlan(units: remaining, leases: leases, store: self)
            let outcome: RunOutcome
            do {
                outcome = try run(plan)
            } catch {
                // The outcome is unknown (the connection may have dropped after the commit):
                // forget the holds; the engine reloads what it failed, and the next acquire
                // compares the head with what memory holds.
                for scope in plan.scopes { leases.lost(scope) }
                for unit in remaining { unit.fail(error) }
                return
            }
            if !outcome.refused.isEmpty {
                // Rolled back: a write whose check failed (a reaper's claim that moved, a queued
                // write committed before) is not made; the rest commit on the next try.
                remaining = remaining.enumerated().filter { index, unit in
                    guard let refusal = outcome.refused[index] else { return true }
                    unit.fail(refusal)
                    return false
                }.map(\.element)
                continue
            }
            let passed = outcome.passed
            let fenced = plan.scopes.subtracting(passed)
            for scope in fenced { leases.lost(scope) }
            if !fenced.isEmpty && plan.needsTransaction {
                // Rolled back as a whole: fail what touched a fenced scope, commit the rest.
                remaining = failing(remaining, Dictionary(uniqueKeysWithValues: fenced.map { ($0, fencedOff($0)) }))
                continue
            }
            for scope in passed { leases.committed(scope, seq: plan.newSeq[scope] ?? 0) }
            for unit in remaining {
                let lost = CommitPlan.scopes(of: unit).first(where: fenced.contains)
                switch unit {
                case .documents(let batch, let completion):
                    if let lost { completion(.failure(fencedOff(lost))); continue }
                    // A companion of another store runs once the commit is durable: after a crash
                    // in between, an edge client sends its write again (at least once, as the SDK
                    // does when an acknowledgement is lost). This store's own ran in the commit.
                    if let other = batch.companion, (other as? PostgresEdgeCompanion)?.store !== self { other.enqueueAlone() }
                    completion(.success(()))
                case .tree(_, let completion):
                    completion(lost.map { .failure(fencedOff($0)) } ?? .success(()))
                case .edge, .alone: break
                }
            }
            ring(plan.newSeq.filter { passed.contains($0.key) })
            return
        }
    }

    /// Fails the units that touch a refused scope; returns the others.
    private func failing(_ units: [PostgresCommitQueue.Unit], _ refused: [String: FiregateError]) -> [PostgresCommitQueue.Unit] {
        guard !refused.isEmpty else { return units }
        return units.filter { unit in
            guard let scope = CommitPlan.scopes(of: unit).first(where: { refused[$0] != nil }) else { return true }
            unit.fail(refused[scope]!)
            return false
        }
    }

    private func fencedOff(_ scope: String) -> FiregateError {
        FiregateError(.unavailable, "Replica \(replicaID) no longer owns \(scope) (another replica took it over); the write was not made. Retry.")
    }

    /// Takes the lease of `scope` (a new epoch) if it is free, expired or already this
    /// replica's. Fails UNAVAILABLE if another live replica holds it, or if the log moved past
    /// what this replica's memory holds (then the engine reloads the scope).
    func acquire(_ scope: String) throws(FiregateError) {
        let rows = try writer.query("""
            INSERT INTO fg_heads AS h (scope, owner, owner_epoch, lease_until)
            VALUES (\(scope), \(replicaID), 1, now() + make_interval(secs => \(Double(leaseSeconds))))
            ON CONFLICT (scope) DO UPDATE SET owner = excluded.owner, owner_epoch = h.owner_epoch + 1, lease_until = excluded.lease_until
            WHERE h.owner IS NULL OR h.owner = excluded.owner OR h.lease_until IS NULL OR h.lease_until < now()
            RETURNING owner_epoch, seq, generation
            """).rows
        guard let row = rows.first, let (epoch, seq, generation) = try? row.decode((Int64, Int64, String).self) else {
            let owner = try? writer.query("SELECT owner, lease_until::text FROM fg_heads WHERE scope = \(scope)").rows.first?
                .decode((String?, String?).self)
            throw FiregateError(.unavailable, "\(scope) is owned by replica \(owner?.0 ?? "?") (lease until \(owner?.1 ?? "?")); this replica cannot write it now. Retry.")
        }
        leases.acquired(scope, epoch: epoch)
        // A scope new to the store gets its generation here; a known one keeps memory's, which
        // a load or a clear set (a mismatch is a log that moved on: the seq check says so).
        if leases.hold(scope).generation == nil { leases.generation(scope, generation) }
        let known = leases.hold(scope).seq
        if seq != known {
            throw FiregateError(.unavailable, "\(scope) was written elsewhere (log at \(seq), this replica at \(known)); it reloads. Retry.")
        }
    }

    /// What a run did: the scopes whose fence held, and the units (by index) rolled back for a
    /// check that failed, with why (none when it committed).
    private struct RunOutcome {
        var passed: Set<String>
        var refused: [Int: FiregateError] = [:]
    }

    /// Runs the plan.
    private func run(_ plan: CommitPlan) throws(FiregateError) -> RunOutcome {
        if !plan.needsTransaction { return RunOutcome(passed: try fencedStatement(plan)) }
        return try writer.transaction { () throws(FiregateError) -> PostgresSession.Outcome<RunOutcome> in
            let passed = try fencedStatement(plan)
            // A fenced scope's rows must not be written with the others': roll back, retry without it.
            guard passed == plan.scopes else { return .rollback(RunOutcome(passed: passed)) }
            for statement in plan.treeStatements { try writer.query(statement) }
            for (client, change) in plan.companions { try apply(change, client: client) }
            var refused: [Int: FiregateError] = [:]
            for check in plan.checks where try writer.query(check.statement).rows.isEmpty {
                refused[check.unit] = check.refusal
            }
            return refused.isEmpty ? .commit(RunOutcome(passed: passed)) : .rollback(RunOutcome(passed: passed, refused: refused))
        }
    }

    private func fencedStatement(_ plan: CommitPlan) throws(FiregateError) -> Set<String> {
        var binds = PostgresBindings()
        let heads = plan.heads
        binds.append(heads.map(\.scope)); binds.append(heads.map(\.oldSeq)); binds.append(heads.map(\.newSeq))
        binds.append(heads.map(\.commitUs)); binds.append(heads.map(\.epoch)); binds.append(replicaID)
        binds.append(plan.upserts.map(\.scope)); binds.append(plan.upserts.map(\.path)); binds.append(plan.upserts.map(\.fields))
        binds.append(plan.upserts.map(\.createUs)); binds.append(plan.upserts.map(\.updateUs))
        binds.append(plan.deletes.map(\.scope)); binds.append(plan.deletes.map(\.path))
        binds.append(plan.log.map(\.scope)); binds.append(plan.log.map(\.seq)); binds.append(plan.log.map(\.commitUs)); binds.append(plan.log.map(\.body))
        let rows = try writer.query(PostgresQuery(unsafeSQL: PostgresStore.fencedCommitSQL, binds: binds)).rows
        return Set(rows.compactMap { try? $0.decode(String.self) })
    }

    static let fencedCommitSQL = """
        WITH t AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[]) AS t(scope, old_seq, new_seq, cus, oe)),
        h AS (UPDATE fg_heads h SET seq = t.new_seq, commit_us = t.cus FROM t
              WHERE h.scope = t.scope AND h.seq = t.old_seq AND h.owner = $6 AND h.owner_epoch = t.oe RETURNING h.scope),
        up AS (INSERT INTO fg_documents (scope, path, fields, create_us, update_us)
               SELECT u.scope, u.path, u.fields, u.cu, u.uu
               FROM unnest($7::text[], $8::text[], $9::bytea[], $10::bigint[], $11::bigint[]) AS u(scope, path, fields, cu, uu)
               WHERE u.scope IN (SELECT scope FROM h)
               ON CONFLICT (scope, path) DO UPDATE SET fields = excluded.fields, create_us = excluded.create_us, update_us = excluded.update_us),
        del AS (DELETE FROM fg_documents d USING unnest($12::text[], $13::text[]) AS x(scope, path)
                WHERE d.scope = x.scope AND d.path = x.path AND x.scope IN (SELECT scope FROM h)),
        lg AS (INSERT INTO fg_log (scope, seq, commit_us, body)
               SELECT l.scope, l.seq, l.cus, l.body
               FROM unnest($14::text[], $15::bigint[], $16::bigint[], $17::bytea[]) AS l(scope, seq, cus, body)
               WHERE l.scope IN (SELECT scope FROM h))
        SELECT scope FROM h
        """
}
