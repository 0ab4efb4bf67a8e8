import FiregateModel

/// `POST /clients/{id}:runTimer`: the SDK's timers, fired now instead of after their delay.
extension EdgeClient {
    /// Runs each timer that is pending; returns the names of those that ran.
    public func runTimers(_ timers: [SDKTimer]) throws(FiregateError) -> [String] {
        try beginDataCall()
        var ran: [String] = []
        for timer in timers where runTimer(timer) { ran.append(timer.rawValue) }
        return ran
    }

    private func runTimer(_ timer: SDKTimer) -> Bool {
        switch timer {
        case .listenStreamConnectionBackoff:
            return remote.reconnectScripted()
        case .listenStreamIdle:
            return remote.closeScriptedIfIdle()
        case .onlineStateTimeout:
            guard remote.scriptedOnlineStateTimeout() else { return false }
            // OnlineState.Offline: current views go from cache, held first snapshots are raised.
            queries.markAllNotCurrent()
            updateViews()
            raiseOnlineState()
            return true
        case .writeStreamConnectionBackoff:
            guard remote.writePipeline.retryDelay > 0, !local.mutationQueue.isEmpty, remote.canUseNetwork else { return false }
            pumpWrites()
            return true
        case .lruGarbageCollection:
            guard started, settings.garbageCollector == .lru else { return false }
            _ = runScheduledGarbageCollection()
            return true
        case .asyncQueueRetry:
            let deferred = retryDeferredTargets()
            return retryRecovery() || deferred
        case .writeStreamIdle, .clientMetadataRefresh, .healthCheckTimeout:
            return false
        }
    }
}
