// Client requests of gpsd's protocol (https://gpsd.io/gpsd_json.html, "Core protocol
// commands"): `?VERSION;`, `?DEVICES;`, `?WATCH;`, `?WATCH={…}`, `?POLL;`, `?DEVICE;`,
// `?DEVICE={…}`.

/// One command from a client.
public enum GPSDCommand: Sendable, Hashable {
  case version
  case devices
  /// `?WATCH;` (`nil`: report the policy) or `?WATCH={…}` (change it).
  case watch(WatchRequest?)
  case poll
  /// `?DEVICE;` (`nil`) or `?DEVICE={…}`.
  case device(DeviceRequest?)
  /// A command that gpsd would answer with an `ERROR` report carrying `message`: an unknown
  /// command, a malformed argument, a request over the length limit.
  case invalid(message: String)
}

/// The attributes of a `?WATCH={…}` argument that were present.
///
/// gpsd's rules for applying one (``WatchPolicy/apply(_:)``): `enable` is true unless given;
/// `json`, `nmea` and `raw` keep their previous values unless given; `device`, `scaled`,
/// `split24`, `pps` and `timing` are reset unless given. Unknown attributes are ignored.
public struct WatchRequest: Sendable, Hashable {
  public var enable: Bool?
  public var json: Bool?
  public var nmea: Bool?
  public var raw: Int?
  public var scaled: Bool?
  public var split24: Bool?
  public var pps: Bool?
  public var timing: Bool?
  public var device: String?

  public init(
    enable: Bool? = nil, json: Bool? = nil, nmea: Bool? = nil, raw: Int? = nil,
    scaled: Bool? = nil, split24: Bool? = nil, pps: Bool? = nil, timing: Bool? = nil,
    device: String? = nil
  ) {
    self.enable = enable
    self.json = json
    self.nmea = nmea
    self.raw = raw
    self.scaled = scaled
    self.split24 = split24
    self.pps = pps
    self.timing = timing
    self.device = device
  }

  /// Reads the argument object; `nil` and a message (for `Invalid WATCH: …`) if it is not one.
  static func parse(_ value: JSONValue) -> Result<WatchRequest, ArgumentError> {
    var request = WatchRequest()
    return ArgumentError.readMembers(of: value, class: "WATCH") { member throws(ArgumentError) in
      switch member.key {
      case "enable", "json", "nmea", "scaled", "split24", "pps", "timing":
        guard case .bool(let flag) = member.value else {
          throw ArgumentError.expectingBoolean(member)
        }
        switch member.key {
        case "enable": request.enable = flag
        case "json": request.json = flag
        case "nmea": request.nmea = flag
        case "scaled": request.scaled = flag
        case "split24": request.split24 = flag
        case "pps": request.pps = flag
        default: request.timing = flag
        }
      case "raw":
        // gpsd reads the integer part of any number ("raw":2.5 is 2).
        guard case .number(let number) = member.value,
          let raw = Int(exactly: number.rounded(.towardZero))
        else {
          throw ArgumentError.expectingNumber(member)
        }
        request.raw = raw
      case "device":
        request.device = try ArgumentError.string(member)
      default:
        break  // gpsd ignores attributes it does not know, for cross-version compatibility
      }
    }.map { request }
  }
}

/// The attributes of a `?DEVICE={…}` argument.
public struct DeviceRequest: Sendable, Hashable {
  /// The device the request is about, if named.
  public var path: String?
  /// Whether it asks for a change (speed, serial mode, cycle, native mode, bytes to send)
  /// rather than a report.
  public var changesSettings: Bool

  public init(path: String? = nil, changesSettings: Bool = false) {
    self.path = path
    self.changesSettings = changesSettings
  }

  static func parse(_ value: JSONValue) -> Result<DeviceRequest, ArgumentError> {
    var request = DeviceRequest()
    return ArgumentError.readMembers(of: value, class: "DEVICE") { member throws(ArgumentError) in
      switch member.key {
      case "path":
        request.path = try ArgumentError.string(member)
      case "bps", "parity", "stopbits", "native", "cycle", "hexdata":
        request.changesSettings = true
      default:
        break
      }
    }.map { request }
  }
}

/// Why an argument object was refused.
struct ArgumentError: Error {
  let message: String
  init(_ message: String) { self.message = message }

  /// What every request's argument reader starts with, in gpsd's words: the argument must be
  /// an object, and its `class`, where given, must name the request. Calls `body` with the
  /// other members in order, so the first member in error is the one reported.
  static func readMembers(
    of value: JSONValue, class name: String,
    _ body: (JSONMember) throws(ArgumentError) -> Void
  ) -> Result<Void, ArgumentError> {
    guard case .object(let members) = value else {
      return .failure(ArgumentError("non-whitespace when expecting object start"))
    }
    do throws(ArgumentError) {
      for member in members {
        guard member.key == "class" else {
          try body(member)
          continue
        }
        guard case .string(name) = member.value else {
          throw ArgumentError("check attribute not matched")
        }
      }
    } catch {
      return .failure(error)
    }
    return .success(())
  }

  /// A member's string value.
  static func string(_ member: JSONMember) throws(ArgumentError) -> String {
    guard case .string(let text) = member.value else {
      throw ArgumentError("didn't see quoted value when expecting string")
    }
    return text
  }

  static func expectingBoolean(_ member: JSONMember) -> ArgumentError {
    if case .string = member.value {
      return ArgumentError(
        "saw quoted value when expecting nonstring (\"\(member.key)\" is true or false)")
    }
    return ArgumentError("\"\(member.key)\" must be true or false")
  }

  static func expectingNumber(_ member: JSONMember) -> ArgumentError {
    if case .string = member.value {
      return ArgumentError(
        "saw quoted value when expecting nonstring (\"\(member.key)\" is a number)")
    }
    return ArgumentError("\"\(member.key)\" must be a number")
  }
}

/// A client's watch policy: what it has asked to be sent.
public struct WatchPolicy: Sendable, Hashable {
  /// Watcher mode: the client is sent reports as they happen (and keeps the receivers it
  /// watches powered).
  public var enable = false
  /// TPV, SKY and DEVICE reports.
  public var json = false
  /// NMEA sentences as received.
  public var nmea = false
  /// 1: the NMEA sentences (binary frames hex-dumped in gpsd); 2: the bytes verbatim.
  public var raw = 0
  public var scaled = false
  public var timing = false
  public var split24 = false
  public var pps = false
  /// Only this device, rather than all of them.
  public var device: String?

  public init() {}

  /// Applies a `?WATCH={…}` argument the way gpsd does (see ``WatchRequest``).
  public mutating func apply(_ request: WatchRequest) {
    enable = request.enable ?? true
    if let json = request.json { self.json = json }
    if let nmea = request.nmea { self.nmea = nmea }
    if let raw = request.raw { self.raw = raw }
    scaled = request.scaled ?? false
    split24 = request.split24 ?? false
    pps = request.pps ?? false
    timing = request.timing ?? false
    device = request.device.flatMap { $0.isEmpty ? nil : $0 }
  }

  /// Whether the client is sent JSON reports now.
  public var wantsReports: Bool { enable && json }
  /// Whether the client is sent the receivers' NMEA sentences now.
  public var wantsSentences: Bool { enable && (nmea || raw == 1) }
  /// Whether the client is sent the receivers' bytes verbatim now.
  public var wantsVerbatim: Bool { enable && raw >= 2 }
}

/// Cuts a client's byte stream into commands, the way gpsd reads them, without trusting it.
///
/// A request line starts with `?` and holds one or more commands: a name followed by `;`, or
/// by `=` and a JSON object (then an optional `;`). Line ends between commands are ignored.
/// Unlike gpsd, which takes whatever one `read` returned as the request, commands are
/// assembled across reads, so a command split by the network is still understood; and a
/// name ended by the line end (`?POLL` + newline) is accepted as if `;` followed. Lines that
/// do not start with `?` are ignored, as gpsd ignores them.
///
/// Bounded: a command still incomplete after ``maximumLength`` bytes is answered with an
/// error and discarded up to the next line end, so a client cannot make the server buffer
/// without limit.
public struct GPSDRequestReader: Sendable {
  /// The longest command accepted, in bytes (gpsd documents 80 and reads at most 8191 at
  /// once; device paths in `?WATCH` can exceed 80).
  public let maximumLength: Int
  private var pending: [UInt8] = []
  /// After an overlong or malformed request: ignore input up to the next line end.
  private var skippingLine = false

  public init(maximumLength: Int = 1024) {
    self.maximumLength = max(16, maximumLength)
  }

  /// Bytes received but not yet part of a complete command.
  public var bufferedCount: Int { pending.count }

  /// Adds `bytes` and returns every command they complete, in order.
  public mutating func read<Bytes: Collection>(_ bytes: Bytes) -> [GPSDCommand]
  where Bytes.Element == UInt8 {
    var commands: [GPSDCommand] = []
    var input = bytes[...]
    if skippingLine {
      guard let newline = input.firstIndex(of: 0x0A) else { return [] }
      skippingLine = false
      input = input[input.index(after: newline)...]
    }
    pending.append(contentsOf: input)
    var start = 0
    scanning: while true {
      switch Self.next(in: pending, from: start, maximumLength: maximumLength) {
      case .command(let command, let end):
        commands.append(command)
        start = end
      case .skipLine(let command, let end):
        if let command { commands.append(command) }
        if let end {
          start = end
        } else {
          start = pending.count
          skippingLine = true
        }
      case .needMore:
        break scanning
      case .empty(let end):
        start = end
        break scanning
      }
    }
    pending.removeFirst(start)
    if pending.count > maximumLength {
      commands.append(.invalid(message: Self.tooLong(maximumLength)))
      let newline = pending.firstIndex(of: 0x0A)
      if let newline {
        pending.removeFirst(newline + 1)
        commands += read([])
      } else {
        pending.removeAll()
        skippingLine = true
      }
    }
    return commands
  }

  enum Step {
    case command(GPSDCommand, end: Int)
    /// The rest of the line is unusable; `end` is just past its line feed, `nil` if it has not
    /// arrived yet.
    case skipLine(GPSDCommand?, end: Int?)
    case needMore
    /// Only white space and separators up to `end`.
    case empty(end: Int)
  }

  static func tooLong(_ maximumLength: Int) -> String {
    "Request too long: a request line may hold at most \(maximumLength) bytes"
  }

  static func next(in bytes: [UInt8], from start: Int, maximumLength: Int) -> Step {
    var index = start
    while index < bytes.count, isSeparator(bytes[index]) { index += 1 }
    guard index < bytes.count else { return .empty(end: index) }
    let lineEnd = bytes[index...].firstIndex(of: 0x0A)
    guard bytes[index] == UInt8(ascii: "?") else {
      // Not a request: gpsd ignores such a line.
      return .skipLine(nil, end: lineEnd.map { $0 + 1 })
    }
    // The limit holds for the rest of a line even when it arrived whole.
    if let lineEnd, lineEnd - index > maximumLength {
      return .skipLine(.invalid(message: tooLong(maximumLength)), end: lineEnd + 1)
    }
    var nameEnd = index + 1
    while nameEnd < bytes.count, isLetter(bytes[nameEnd]) { nameEnd += 1 }
    guard nameEnd < bytes.count else { return .needMore }
    let name = String(decoding: bytes[(index + 1)..<nameEnd], as: UTF8.self)
    let terminator = bytes[nameEnd]
    func unrecognized() -> Step {
      let textEnd = lineEnd ?? bytes.count
      var text = bytes[index..<textEnd]
      while let last = text.last, last == 0x0D || last == 0x20 || last == 0x09 { text.removeLast() }
      let quoted = String(decoding: text.prefix(120), as: UTF8.self)
      return .skipLine(
        .invalid(message: "Unrecognized request '\(quoted)'"), end: lineEnd.map { $0 + 1 })
    }
    let known = ["VERSION", "DEVICES", "WATCH", "POLL", "DEVICE"]
    guard known.contains(name) else {
      // Wait for the line end so the message can quote the whole request.
      return lineEnd == nil && bytes.count - index < 120 ? .needMore : unrecognized()
    }
    switch terminator {
    case UInt8(ascii: ";"), 0x0D, 0x0A:
      let end = terminator == UInt8(ascii: ";") ? nameEnd + 1 : nameEnd
      switch name {
      case "VERSION": return .command(.version, end: end)
      case "DEVICES": return .command(.devices, end: end)
      case "WATCH": return .command(.watch(nil), end: end)
      case "POLL": return .command(.poll, end: end)
      default: return .command(.device(nil), end: end)
      }
    case UInt8(ascii: "=") where name == "WATCH" || name == "DEVICE":
      switch JSONReader.read(bytes, from: nameEnd + 1) {
      case .incomplete:
        // JSON holds no raw line feed: a line end inside the object means it was cut short.
        if let lineEnd {
          return .skipLine(
            .invalid(
              message: "Invalid \(name): the JSON object is not closed before the line ends"),
            end: lineEnd + 1)
        }
        return .needMore
      case .invalid(let message):
        return .skipLine(
          .invalid(message: "Invalid \(name): \(message)"), end: lineEnd.map { $0 + 1 })
      case .value(let value, var end):
        while end < bytes.count, bytes[end] == 0x20 || bytes[end] == 0x09 { end += 1 }
        if end < bytes.count, bytes[end] == UInt8(ascii: ";") { end += 1 }
        if name == "WATCH" {
          switch WatchRequest.parse(value) {
          case .success(let request): return .command(.watch(request), end: end)
          case .failure(let error):
            return .command(.invalid(message: "Invalid WATCH: \(error.message)"), end: end)
          }
        }
        switch DeviceRequest.parse(value) {
        case .success(let request): return .command(.device(request), end: end)
        case .failure(let error):
          return .command(.invalid(message: "Invalid DEVICE: \(error.message)"), end: end)
        }
      }
    default:
      return unrecognized()
    }
  }

  static func isSeparator(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A || byte == UInt8(ascii: ";")
  }

  static func isLetter(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
      || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
  }
}
