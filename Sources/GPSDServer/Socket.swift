import CServerShims
import Glibc

/// An `errno` value from a socket call, with the call's name for messages.
public struct SocketError: Error, Sendable, Hashable, CustomStringConvertible {
  public let operation: String
  public let code: Int32

  init(_ operation: String, code: Int32 = errno) {
    self.operation = operation
    self.code = code
  }

  public var description: String {
    "\(operation): \(String(cString: strerror(code)))"
  }

  var isWouldBlock: Bool { code == EAGAIN || code == EWOULDBLOCK }
}

/// Retries `call` while it fails with `EINTR`.
@inline(__always)
func retryingInterrupts<Result: BinaryInteger>(_ call: () -> Result) -> Result {
  while true {
    let result = call()
    if result >= 0 || errno != EINTR { return result }
  }
}

/// Closes a descriptor once; never retried (on Linux the descriptor is gone even on EINTR).
@inline(__always)
func closeDescriptor(_ descriptor: Int32) {
  _ = Glibc.close(descriptor)
}

/// A bound, listening, non-blocking TCP socket.
final class ListeningSocket {
  let descriptor: Int32
  /// The address actually bound (the port the kernel chose for port 0).
  let address: ListenAddress

  init(address: ListenAddress, backlog: Int32 = 128) throws(SocketError) {
    let family = address.isIPv6 ? AF_INET6 : AF_INET
    let descriptor = socket(
      family,
      Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { throw SocketError("socket") }
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
      let error = SocketError("bind \(address)")
      closeDescriptor(descriptor)
      throw error
    }
    guard listen(descriptor, backlog) == 0 else {
      let error = SocketError("listen \(address)")
      closeDescriptor(descriptor)
      throw error
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
    self.address = actual
  }

  /// The next pending connection, non-blocking and close-on-exec; `nil` when none is waiting.
  func accept() throws(SocketError) -> Int32? {
    let client = retryingInterrupts { cserver_accept(descriptor) }
    if client >= 0 { return client }
    let error = SocketError("accept")
    // A connection reset before it was accepted, or a transient lack of descriptors, is not
    // a reason to stop listening.
    if error.isWouldBlock || error.code == ECONNABORTED || error.code == EPROTO { return nil }
    throw error
  }

  func close() { closeDescriptor(descriptor) }
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

  func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
    let count = retryingInterrupts { recv(descriptor, buffer.baseAddress, buffer.count, 0) }
    if count > 0 { return .received(count) }
    if count == 0 { return .closed }
    return errno == EAGAIN || errno == EWOULDBLOCK ? .wouldBlock : .closed
  }

  /// Writes what the socket takes now; returns how many bytes, or `nil` when the peer is gone.
  func write(_ bytes: UnsafeRawBufferPointer) -> Int? {
    guard !bytes.isEmpty else { return 0 }
    let count = retryingInterrupts {
      send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
    }
    if count >= 0 { return count }
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : nil
  }

  func close() { closeDescriptor(descriptor) }
}

/// An eventfd that other threads write to wake the event loop from `poll`.
final class Wakeup: @unchecked Sendable {
  let descriptor: Int32

  init() throws(SocketError) {
    let descriptor = cserver_eventfd()
    guard descriptor >= 0 else { throw SocketError("eventfd") }
    self.descriptor = descriptor
  }

  /// Wakes the loop. Never blocks: the counter only saturates after 2^64 − 2 wakes.
  func signal() {
    var one: UInt64 = 1
    _ = retryingInterrupts { Glibc.write(descriptor, &one, 8) }
  }

  /// Resets the counter after a wake.
  func drain() {
    var value: UInt64 = 0
    _ = retryingInterrupts { Glibc.read(descriptor, &value, 8) }
  }

  deinit { closeDescriptor(descriptor) }
}
