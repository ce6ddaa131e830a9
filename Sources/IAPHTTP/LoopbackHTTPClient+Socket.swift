import Foundation
import IAPValidatorAPI

#if canImport(Glibc)
    import Glibc
#endif

extension LoopbackHTTPClient {
    /// Asks the kernel to acknowledge what arrived without its delayed-ACK wait (Linux's TCP_QUICKACK, which lapses
    /// and is set again after every read). A server that writes a response's head and body in two sends (Python's
    /// http.server, among many) keeps the body back under Nagle's algorithm until the head is acknowledged: with a
    /// delayed ACK every keep-alive request then took 40 ms, a fault of the pairing and not of the backend.
    @discardableResult
    static func acknowledgeAtOnce(_ fd: Int32) -> Bool {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), Int32(TCP_QUICKACK), &one, socklen_t(MemoryLayout<Int32>.size))
        return true
    }

    /// A connected TCP socket (no Nagle, send/receive timeouts), or nil when nothing accepts on host:port.
    /// `localhost` is tried as 127.0.0.1, then as ::1: a server told to listen on "localhost" may have taken either
    /// (Node.js takes the resolver's first answer, often ::1 alone).
    static func openSocket(host: String, port: Int, timeout: TimeInterval) -> Int32? {
        switch host {
        case "::1", "[::1]": return openSocket(ipv6Loopback: true, port: port, timeout: timeout)
        case "localhost":
            return openSocket(ipv6Loopback: false, port: port, timeout: timeout)
                ?? openSocket(ipv6Loopback: true, port: port, timeout: timeout)
        default: return openSocket(ipv6Loopback: false, port: port, timeout: timeout)
        }
    }

    private static func openSocket(ipv6Loopback: Bool, port: Int, timeout: TimeInterval) -> Int32? {
        let fd = socket(ipv6Loopback ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var tv = timeval(tv_sec: Int(timeout), tv_usec: .init((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let rc: Int32
        if ipv6Loopback {
            var addr = sockaddr_in6()
            addr.sin6_family = sa_family_t(AF_INET6)
            addr.sin6_port = in_port_t(UInt16(port).bigEndian)
            addr.sin6_addr = in6addr_loopback
            rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = in_port_t(UInt16(port).bigEndian)
            addr.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian  // 127.0.0.1, the only IPv4 host a target may name
            rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        if rc != 0 {
            Glibc.close(fd)
            return nil
        }
        return fd
    }

    /// Whether something accepts connections on host:port.
    public static func accepts(host: String, port: Int) -> Bool {
        guard let fd = openSocket(host: host, port: port, timeout: 1) else { return false }
        Glibc.close(fd)
        return true
    }

}

extension LoopbackHTTPClient {
    /// A loopback port nothing listens on now (the kernel's choice for port 0): for a backend iapcheck starts.
    public static func freePort() throws(ValidatorFailure) -> Int {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ValidatorFailure(.unavailable, "no socket for a free port: errno \(errno)") }
        defer { Glibc.close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, len) }
        }
        guard bound == 0 else {
            throw ValidatorFailure(.unavailable, "cannot bind a free loopback port: errno \(errno)")
        }
        let named = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.getsockname(fd, $0, &len) }
        }
        guard named == 0 else { throw ValidatorFailure(.unavailable, "cannot read the free port: errno \(errno)") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}
