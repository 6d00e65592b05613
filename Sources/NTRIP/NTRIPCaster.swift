/// A caster's mountpoint, from `ntrip://[user[:password]@]host[:port]/MOUNTPOINT`
/// (`ntrip1://` asks in NTRIP 1's form for a caster that knows no other). The port defaults
/// to 2101, NTRIP's registered port.
public struct NTRIPCaster: Sendable, Hashable, CustomStringConvertible {
  public var host: String
  public var port: Int
  public var mountpoint: String
  /// 2 (HTTP/1.1 with `Ntrip-Version: Ntrip/2.0`) or 1 (HTTP/1.0, no version header).
  public var version: Int
  /// From the address, or given apart (a file, the environment): see ``NTRIPCredentials``.
  public var credentials: NTRIPCredentials?

  public init(
    host: String, port: Int = 2101, mountpoint: String, version: Int = 2,
    credentials: NTRIPCredentials? = nil
  ) {
    self.host = host
    self.port = port
    self.mountpoint = mountpoint
    self.version = version
    self.credentials = credentials
  }

  /// Reads an `ntrip://` address; user and password in it are percent-decoded.
  public init(url: String) throws(NTRIPAddressError) {
    var rest: Substring
    if url.hasPrefix("ntrip://") {
      rest = url.dropFirst(8)
      version = 2
    } else if url.hasPrefix("ntrip1://") {
      rest = url.dropFirst(9)
      version = 1
    } else {
      throw NTRIPAddressError("give the caster as ntrip://[user[:password]@]host[:port]/MOUNTPOINT")
    }
    guard let slash = rest.firstIndex(of: "/") else {
      throw NTRIPAddressError("the address names no mountpoint: add /MOUNTPOINT after the host")
    }
    let authority = rest[..<slash]
    let mount = rest[rest.index(after: slash)...]
    guard !mount.isEmpty, !mount.contains(where: { $0 == " " || $0 == "/" || $0 == "?" }) else {
      throw NTRIPAddressError("the mountpoint must be one name after the host, such as /RTCM3")
    }
    mountpoint = String(mount)
    rest = authority
    if let at = rest.lastIndex(of: "@") {
      let user = rest[..<at]
      rest = rest[rest.index(after: at)...]
      guard let parsed = NTRIPCredentials(text: user, decodingPercent: true) else {
        throw NTRIPAddressError("the user name in the address is not valid")
      }
      credentials = parsed
    } else {
      credentials = nil
    }
    if rest.hasPrefix("[") {
      guard let close = rest.firstIndex(of: "]") else {
        throw NTRIPAddressError("an IPv6 address in brackets lacks its ]")
      }
      host = String(rest[rest.index(after: rest.startIndex)..<close])
      rest = rest[rest.index(after: close)...]
    } else {
      let colon = rest.firstIndex(of: ":") ?? rest.endIndex
      host = String(rest[..<colon])
      rest = rest[colon...]
    }
    guard !host.isEmpty else { throw NTRIPAddressError("the address names no host") }
    if rest.isEmpty {
      port = 2101
    } else {
      guard rest.first == ":", let number = Int(rest.dropFirst()), (1...65535).contains(number)
      else { throw NTRIPAddressError("the port after the host must be a number from 1 to 65535") }
      port = number
    }
  }

  /// The address without the password (the user name stays: it says which account).
  public var description: String {
    let user = credentials.map { "\($0.user):***@" } ?? ""
    let shownHost = host.contains(":") ? "[\(host)]" : host
    return "ntrip\(version == 1 ? "1" : "")://\(user)\(shownHost):\(port)/\(mountpoint)"
  }

  /// The request for the mountpoint's stream, as NTRIP 1 or 2 asks for it.
  public func request(userAgent: String) -> [UInt8] {
    var text = "GET /\(mountpoint) HTTP/1.\(version == 1 ? "0" : "1")\r\n"
    let shownHost = host.contains(":") ? "[\(host)]" : host
    text += "Host: \(shownHost):\(port)\r\n"
    if version != 1 { text += "Ntrip-Version: Ntrip/2.0\r\n" }
    text += "User-Agent: \(userAgent)\r\n"
    if let credentials {
      text +=
        "Authorization: Basic \(Base64.encode(Array("\(credentials.user):\(credentials.password)".utf8)))\r\n"
    }
    text += "Connection: close\r\n\r\n"
    return Array(text.utf8)
  }
}

/// A user name and password for a caster. Never printed: its description masks the password.
public struct NTRIPCredentials: Sendable, Hashable, CustomStringConvertible {
  public var user: String
  public var password: String

  public init(user: String, password: String) {
    self.user = user
    self.password = password
  }

  /// `user:password` as a credentials file or `SERIALGPS_NTRIP_CREDENTIALS` holds it (the
  /// first line; the password may contain colons). `nil` without a user.
  public init?(text: some StringProtocol) {
    self.init(text: Substring(text), decodingPercent: false)
  }

  init?(text: Substring, decodingPercent: Bool) {
    let firstLine = text.prefix { $0 != "\n" && $0 != "\r" }
    let colon = firstLine.firstIndex(of: ":")
    let userPart = firstLine[..<(colon ?? firstLine.endIndex)]
    let passwordPart = colon.map { firstLine[firstLine.index(after: $0)...] } ?? ""
    guard !userPart.isEmpty else { return nil }
    if decodingPercent {
      guard let user = Self.percentDecoded(userPart),
        let password = Self.percentDecoded(passwordPart)
      else { return nil }
      self.init(user: user, password: password)
    } else {
      self.init(user: String(userPart), password: String(passwordPart))
    }
  }

  public var description: String { "\(user):***" }

  private static func percentDecoded(_ text: Substring) -> String? {
    var bytes: [UInt8] = []
    var utf8 = text.utf8[...]
    while let byte = utf8.popFirst() {
      if byte == UInt8(ascii: "%") {
        guard utf8.count >= 2,
          let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16)
        else { return nil }
        bytes.append(value)
        utf8 = utf8.dropFirst(2)
      } else {
        bytes.append(byte)
      }
    }
    return String(decoding: bytes, as: UTF8.self)
  }
}

/// An `ntrip://` address that cannot be used, with what to write instead.
public struct NTRIPAddressError: Error, Sendable, Hashable, CustomStringConvertible {
  public let description: String
  init(_ description: String) { self.description = description }
}

/// Base64 (RFC 4648, with padding) for HTTP Basic authentication.
enum Base64 {
  private static let alphabet = Array(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

  static func encode(_ bytes: [UInt8]) -> String {
    var out: [UInt8] = []
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var index = 0
    while index < bytes.count {
      let count = min(3, bytes.count - index)
      let b0 = UInt32(bytes[index])
      let b1 = count > 1 ? UInt32(bytes[index + 1]) : 0
      let b2 = count > 2 ? UInt32(bytes[index + 2]) : 0
      let group = b0 << 16 | b1 << 8 | b2
      out.append(alphabet[Int(group >> 18 & 63)])
      out.append(alphabet[Int(group >> 12 & 63)])
      out.append(count > 1 ? alphabet[Int(group >> 6 & 63)] : UInt8(ascii: "="))
      out.append(count > 2 ? alphabet[Int(group & 63)] : UInt8(ascii: "="))
      index += 3
    }
    return String(decoding: out, as: UTF8.self)
  }
}
