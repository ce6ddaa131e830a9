import IAPValidatorAPI

extension HTTPValidator: DoctorHinting {
    /// Fixes in the target file's terms: its routes, its `baseURL` and `start`, its clock.
    public var doctorHints: DoctorHints {
        var h = DoctorHints()
        let file = target.file ?? "the target file"
        let target = self.target
        h.whereIs = { op in "routes.\(op) in \(file)" }
        h.lastExchange = { [weak self] in self?.lastExchange }
        h.timeout = timeout
        h.activeFromExpiry = [target.mapping?.entitlements, target.mapping?.products].contains {
            $0 != nil && $0??.active == nil && $0??.state == nil
        }
        for (name, list) in [("entitlements", target.mapping?.entitlements), ("products", target.mapping?.products)] {
            if let id = list?.one { h.namedAlone.append((name, id, "answer.\(name).one in \(file)")) }
        }
        h.failureFix =
            "the backend's answer above, or its log, says why (a clock header it cannot parse, a setting it lacks); a status the target file does not list is added to the route's \"accepted\" or \"refused\""
        h.unreachableFix =
            target.start == nil
            ? "start the backend on http://\(target.urlHost):\(target.port) first, or fix \"baseURL\" in \(file) (or add a \"start\" section so iapcheck starts it)"
            : "the backend did not come up: read its log, and check \"start\" and \"baseURL\" in \(file)"
        switch target.clock {
        case .header(let name):
            h.clockFix =
                "the backend must take \"now\" from the \(name) header (epoch ms) on every request. If it reads the wall clock instead, let iapcheck start it (\"start\") under libfaketime with \"clock\": \"faketime\" in \(file), unless it is a Go or statically linked program, which libfaketime cannot reach: read the header there (docs/http-target.md#the-backends-clock)"
        case .faketime:
            h.clockFix =
                "the backend runs under libfaketime but does not follow it: a Go program (its own clock), a statically linked one, or a cached \"now\" ignores it; give it a clock header instead (\"clock\": \"header\") (docs/http-target.md#the-backends-clock)"
        case .wall:
            h.clockFix =
                "\"clock\": \"wall\" in \(file) says iapcheck cannot set the backend's clock, so it can load the backend but not check it: let iapcheck start it under libfaketime (\"start\" and \"clock\": \"faketime\") or give it a clock header (docs/http-target.md#the-backends-clock)"
        }
        if h.activeFromExpiry {
            // With active read off the expiry, a null expiry ("never") beside an expired entry looks like a clock.
            h.clockFix +=
                "; or, since the mapping reads active off the expiry, the backend's expiry does not end (a null expiry is \"never\"): map \"active\" or \"state\" in \(file)"
        }
        return h
    }
}
