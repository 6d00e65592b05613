import Glibc
import NMEA

/// Where the server listens: a numeric IPv4 or IPv6 address (or `localhost`) and a port.
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
  /// The address as given, in its numeric form (`127.0.0.1`, `::1`).
  public let host: String
  /// The TCP port; 0 asks the kernel for a free one (tests).
  public var port: UInt16
  let isIPv6: Bool
  /// The address in network byte order (4 or 16 bytes).
  let bytes: [UInt8]

  /// gpsd's port.
  public static let gpsdPort: UInt16 = 2947

  /// `127.0.0.1` on `port`.
  public static func loopback(port: UInt16 = gpsdPort) -> ListenAddress {
    try! ListenAddress(host: "127.0.0.1", port: port)
  }

  /// A numeric address (`127.0.0.1`, `0.0.0.0`, `::1`, `::`) or `localhost` (127.0.0.1).
  public init(host: String, port: UInt16) throws(ListenAddressError) {
    let numeric = host == "localhost" ? "127.0.0.1" : host
    var v4 = in_addr()
    var v6 = in6_addr()
    if inet_pton(AF_INET, numeric, &v4) == 1 {
      isIPv6 = false
      bytes = withUnsafeBytes(of: &v4) { Array($0) }
    } else if inet_pton(AF_INET6, numeric, &v6) == 1 {
      isIPv6 = true
      bytes = withUnsafeBytes(of: &v6) { Array($0) }
    } else {
      throw ListenAddressError(
        "'\(host)' is not a numeric IPv4 or IPv6 address; give one such as 127.0.0.1, ::1 or 0.0.0.0"
      )
    }
    self.host = numeric
    self.port = port
  }

  /// The address in `storage` (a `sockaddr_in` or `sockaddr_in6`, as `getsockname` and
  /// `getpeername` fill it); `nil` for another family.
  init?(_ storage: sockaddr_storage) {
    var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    let family = Int32(storage.ss_family)
    guard family == AF_INET || family == AF_INET6 else { return nil }
    let bytes = withUnsafePointer(to: storage) { pointer -> [UInt8] in
      if family == AF_INET6 {
        return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
          var raw = $0.pointee.sin6_addr
          inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
          return withUnsafeBytes(of: &raw) { Array($0) }
        }
      }
      return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
        var raw = $0.pointee.sin_addr
        inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
        return withUnsafeBytes(of: &raw) { Array($0) }
      }
    }
    self.host = String(
      decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    self.port = Self.port(of: storage)
    self.isIPv6 = family == AF_INET6
    self.bytes = bytes
  }

  /// Parses `HOST:PORT`, `[IPV6]:PORT`, `HOST` (gpsd's port) or `:PORT` (loopback).
  public init(parsing text: String) throws(ListenAddressError) {
    var host = text
    var portText: String?
    if text.hasPrefix("[") {
      guard let close = text.firstIndex(of: "]") else {
        throw ListenAddressError("'\(text)': an IPv6 address in brackets needs its closing ']'")
      }
      host = String(text[text.index(after: text.startIndex)..<close])
      let rest = text[text.index(after: close)...]
      if !rest.isEmpty {
        guard rest.hasPrefix(":") else {
          throw ListenAddressError("'\(text)': expected ':PORT' after the bracketed address")
        }
        portText = String(rest.dropFirst())
      }
    } else if let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon {
      host = String(text[..<colon])
      portText = String(text[text.index(after: colon)...])
      if host.isEmpty { host = "127.0.0.1" }
    }
    var port = ListenAddress.gpsdPort
    if let portText {
      guard let value = UInt16(portText) else {
        throw ListenAddressError("'\(text)': the port must be a number from 0 to 65535")
      }
      port = value
    }
    try self.init(host: host, port: port)
  }

  /// Whether only this machine can connect: 127.0.0.0/8 or ::1.
  public var isLoopback: Bool {
    if !isIPv6 { return bytes[0] == 127 }
    return bytes == [UInt8](repeating: 0, count: 15) + [1]
  }

  /// `HOST:PORT` or `[IPV6]:PORT`; the port by `DecimalFormatting`, not interpolation: every
  /// accepted client's peer is described, and the standard library's integer text would be
  /// paged in for it alone (BENCHMARKS.md, Footprint).
  public var description: String {
    var text: [UInt8] = isIPv6 ? [UInt8(ascii: "[")] : []
    text += host.utf8
    if isIPv6 { text.append(UInt8(ascii: "]")) }
    text.append(UInt8(ascii: ":"))
    DecimalFormatting.appendDigits(UInt64(port), to: &text)
    return String(decoding: text, as: UTF8.self)
  }

  func withSocketAddress<Result>(
    _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result
  ) -> Result {
    if isIPv6 {
      var address = sockaddr_in6()
      address.sin6_family = sa_family_t(AF_INET6)
      address.sin6_port = port.bigEndian
      withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: bytes) }
      return Self.asSocketAddress(address, body)
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: bytes) }
    return Self.asSocketAddress(address, body)
  }

  /// `address` (a `sockaddr_in` or `sockaddr_in6`) as the generic `sockaddr` and its length
  /// that `bind` and `connect` take.
  private static func asSocketAddress<Address, Result>(
    _ address: Address, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result
  ) -> Result {
    withUnsafePointer(to: address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        body($0, socklen_t(MemoryLayout<Address>.size))
      }
    }
  }

  static func port(of storage: sockaddr_storage) -> UInt16 {
    let isIPv6 = storage.ss_family == sa_family_t(AF_INET6)
    return withUnsafePointer(to: storage) { pointer in
      if isIPv6 {
        return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
          UInt16(bigEndian: $0.pointee.sin6_port)
        }
      }
      return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
        UInt16(bigEndian: $0.pointee.sin_port)
      }
    }
  }
}

/// A listen address that could not be understood.
public struct ListenAddressError: Error, Sendable, Hashable, CustomStringConvertible {
  public let description: String
  init(_ description: String) { self.description = description }
}
