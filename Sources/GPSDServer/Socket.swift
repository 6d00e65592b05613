import Glibc
import POSIX

/// An `errno` value from a socket call, with the call's name for messages.
public struct SocketError: Error, Sendable, Hashable, CustomStringConvertible {
  public let operation: String
  public let code: Int32

  init(_ operation: String, _ error: Errno = .current) {
    self.operation = operation
    self.code = error.rawValue
  }

  /// "bind 127.0.0.1:2947: Address already in use (EADDRINUSE)".
  public var description: String { "\(operation): \(Errno(rawValue: code))" }

  var isWouldBlock: Bool { code == EAGAIN || code == EWOULDBLOCK }
}

/// A listening, non-blocking socket the event loop accepts connections on.
protocol Listener: AnyObject {
  var descriptor: Int32 { get }
  /// The next pending connection, non-blocking and close-on-exec; `nil` when none is waiting.
  func accept() throws(SocketError) -> Int32?
  /// Closes it now; later calls do nothing.
  func close()
}

/// `accept4` on a listening socket: a connection reset before it was accepted, or a transient
/// lack of descriptors, is not a reason to stop listening (`nil`, as when none waits).
private func acceptPending(on descriptor: Int32) throws(SocketError) -> Int32? {
  do {
    return try FileDescriptor(rawValue: descriptor).acceptConnection().rawValue
  } catch {
    let error = SocketError("accept", error)
    if error.isWouldBlock || error.code == ECONNABORTED || error.code == EPROTO { return nil }
    throw error
  }
}

/// A bound, listening, non-blocking TCP socket, closed by ``close()`` or else when it goes
/// away.
final class ListeningSocket: Listener {
  let descriptor: Int32
  private var owned: OwnedDescriptor?
  /// The address actually bound (the port the kernel chose for port 0).
  let address: ListenAddress

  init(address: ListenAddress, backlog: Int32 = 128) throws(SocketError) {
    let family = address.isIPv6 ? AF_INET6 : AF_INET
    let descriptor = socket(
      family,
      Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { throw SocketError("socket") }
    // Closed by its owner going away when a step below throws.
    let owned = OwnedDescriptor(FileDescriptor(rawValue: descriptor))
    var yes: Int32 = 1
    _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    if address.isIPv6 {
      // Exactly the address asked for: "::" means IPv6 only, not every IPv4 address too.
      _ = setsockopt(
        descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &yes, socklen_t(MemoryLayout<Int32>.size))
    }
    let bound = address.withSocketAddress { pointer, length in
      bind(descriptor, pointer, length)
    }
    guard bound == 0 else {
      throw SocketError("bind \(address)")
    }
    guard listen(descriptor, backlog) == 0 else {
      throw SocketError("listen \(address)")
    }
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let named = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        getsockname(descriptor, $0, &length)
      }
    }
    var actual = address
    if named == 0 { actual.port = ListenAddress.port(of: storage) }
    self.descriptor = descriptor
    self.owned = consume owned
    self.address = actual
  }

  /// Takes a listening socket the service manager passed (``SocketActivation``): it must be a
  /// TCP socket that listens, on IPv4 or IPv6. It is made non-blocking (systemd passes it
  /// blocking) and closed by ``close()`` or when this goes away, like one bound here.
  init(adopting descriptor: Int32) throws(SocketError) {
    let owned = OwnedDescriptor(FileDescriptor(rawValue: descriptor))
    func option(_ name: Int32) throws(SocketError) -> Int32 {
      var value: Int32 = 0
      var length = socklen_t(MemoryLayout<Int32>.size)
      guard getsockopt(descriptor, SOL_SOCKET, name, &value, &length) == 0 else {
        throw SocketError("descriptor \(descriptor) passed by the service manager")
      }
      return value
    }
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let named = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        getsockname(descriptor, $0, &length)
      }
    }
    guard try option(SO_TYPE) == Int32(SOCK_STREAM.rawValue), try option(SO_ACCEPTCONN) == 1,
      named == 0, let address = ListenAddress(storage)
    else {
      // ENOTSOCK's text is the closest: "not a listening TCP socket" is what is wrong.
      throw SocketError(
        "descriptor \(descriptor) passed by the service manager is not a listening TCP socket "
          + "(ListenStream= with an IP address and port is)", Errno(rawValue: ENOTSOCK))
    }
    let flags = fcntl(descriptor, F_GETFL)
    guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else {
      throw SocketError("fcntl O_NONBLOCK on descriptor \(descriptor)")
    }
    self.descriptor = descriptor
    self.owned = consume owned
    self.address = address
  }

  func accept() throws(SocketError) -> Int32? { try acceptPending(on: descriptor) }

  /// Closes it now; later calls do nothing.
  func close() { owned = nil }
}

/// A bound, listening, non-blocking Unix stream socket at a path (`serve --nmea-socket`),
/// with the permissions asked for; the path is removed by ``close()`` or when this goes away.
final class UnixListeningSocket: Listener {
  let descriptor: Int32
  let path: String
  private var owned: OwnedDescriptor?

  /// Binds `path` with permissions `mode`. A socket left at `path` by a process that is gone
  /// is replaced; one that answers, or a file that is not a socket, is not touched.
  init(path: String, mode: mode_t, backlog: Int32 = 16) throws(SocketError) {
    guard path.utf8.count < UnixSocketAddress.pathCapacity else {
      throw SocketError(
        "bind \(path) (at most \(UnixSocketAddress.pathCapacity - 1) bytes)",
        Errno(rawValue: ENAMETOOLONG))
    }
    var status = stat()
    if lstat(path, &status) == 0 {
      guard status.st_mode & S_IFMT == S_IFSOCK else {
        throw SocketError("bind \(path): not a socket, left alone", Errno(rawValue: EEXIST))
      }
      guard !Self.answers(path) else {
        throw SocketError("bind \(path): another process serves it", Errno(rawValue: EADDRINUSE))
      }
      unlink(path)
    }
    let descriptor = socket(
      AF_UNIX,
      Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { throw SocketError("socket") }
    // Closed by its owner going away when a step below throws.
    let owned = OwnedDescriptor(FileDescriptor(rawValue: descriptor))
    let bound = (try? UnixSocketAddress.with(path) { bind(descriptor, $0, $1) }) ?? -1
    guard bound == 0 else { throw SocketError("bind \(path)") }
    // Before listen: nobody connects with the umask's permissions in between.
    guard chmod(path, mode) == 0 else {
      let error = SocketError("chmod \(path)")
      unlink(path)
      throw error
    }
    guard listen(descriptor, backlog) == 0 else {
      let error = SocketError("listen \(path)")
      unlink(path)
      throw error
    }
    self.descriptor = descriptor
    self.path = path
    self.owned = consume owned
  }

  /// Whether a process accepts connections at `path` now.
  private static func answers(_ path: String) -> Bool {
    let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard probe >= 0 else { return false }
    defer { Glibc.close(probe) }
    return (try? UnixSocketAddress.with(path) { connect(probe, $0, $1) }) == 0
  }

  func accept() throws(SocketError) -> Int32? { try acceptPending(on: descriptor) }

  func close() {
    guard owned != nil else { return }
    owned = nil
    unlink(path)
  }

  deinit { close() }
}

/// One accepted client connection's descriptor, non-blocking.
struct ClientSocket {
  let descriptor: Int32

  enum ReadResult {
    case received(Int)
    case wouldBlock
    case closed
  }

  func configure(sendBufferSize: Int?) {
    var yes: Int32 = 1
    // Reports are small and latency matters: no Nagle delay between a TPV and its SKY.
    _ = setsockopt(
      descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
    if var size = sendBufferSize.map({ Int32(clamping: $0) }) {
      _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
  }

  /// The address of the other end (`127.0.0.1:40312`, `[::1]:40312`), for messages.
  var peer: String {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let named = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(descriptor, $0, &length) }
    }
    guard named == 0, let address = ListenAddress(storage) else { return "an unknown peer" }
    return address.description
  }

  func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
    do {
      let count = try retryingOnInterrupt { recv(descriptor, buffer.baseAddress, buffer.count, 0) }
      return count > 0 ? .received(count) : .closed
    } catch {
      return SocketError("recv", error).isWouldBlock ? .wouldBlock : .closed
    }
  }

  /// Writes what the socket takes now; returns how many bytes, or `nil` when the peer is gone.
  func write(_ bytes: UnsafeRawBufferPointer) -> Int? {
    guard !bytes.isEmpty else { return 0 }
    do {
      return try retryingOnInterrupt {
        send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
      }
    } catch {
      return SocketError("send", error).isWouldBlock ? 0 : nil
    }
  }

  /// Closes it once: the event loop calls this when it drops the connection, and only then.
  func close() { try? FileDescriptor(rawValue: descriptor).close() }

  /// Closes after reading what the client has already sent: closing with unread input makes
  /// the kernel reset the connection, and the client may then never see the `ERROR` written
  /// just before (a newcomer refused right after its `?WATCH`).
  func closeAfterDiscardingInput() {
    var scratch = (
      UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0)
    )
    withUnsafeMutableBytes(of: &scratch) { buffer in
      for _ in 0..<8 {
        guard case .received = read(into: buffer) else { break }
      }
    }
    close()
  }
}
