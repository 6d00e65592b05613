import Glibc

/// A filesystem Unix socket address (`sockaddr_un`), the one place one is built: chrony's
/// socket (the time service) and serve's NMEA socket use it.
package enum UnixSocketAddress {
  /// The bytes `sun_path` holds, with the terminating zero.
  package static var pathCapacity: Int { MemoryLayout.size(ofValue: sockaddr_un().sun_path) }

  /// Runs `body` with `path` as a socket address and its length. ENAMETOOLONG when `path`
  /// does not fit (``pathCapacity``).
  package static func with<Result>(
    _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result
  ) throws(Errno) -> Result {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < pathCapacity else { throw Errno(rawValue: ENAMETOOLONG) }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      raw.copyBytes(from: bytes)
      raw[bytes.count] = 0
    }
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
  }
}
