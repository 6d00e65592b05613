import NMEA

/// Why a caster gave no corrections, in the user's words.
public enum NTRIPFailure: Error, Sendable, Hashable, CustomStringConvertible {
  /// HTTP 401: the user name or password is wrong (or the account may not use the mountpoint).
  case unauthorized(mountpoint: String)
  /// The caster answered with its source table: the mountpoint is not (or no longer) offered.
  /// `offered`: the first mountpoints of the table; `more`: how many others it listed.
  case mountpointNotOffered(mountpoint: String, offered: [String], more: Int)
  /// A 3xx answer: redirects are not followed (they could lead the credentials to another host).
  case redirected(status: Int, location: String?)
  /// Any other answer than a stream.
  case refused(status: String)
  /// The answer was not HTTP or NTRIP, or the chunked stream was broken.
  case malformedResponse
  /// The connection could not be made (name resolution, refused, timed out).
  case connectionFailed(String)
  /// The caster closed the connection.
  case closedByCaster
  /// The caster sent nothing for this long.
  case silent(Duration)

  /// Whether trying again soon could help: a wrong password, mountpoint or address stays
  /// wrong, and retrying it would only get the account blocked; those wait for the next
  /// power-on.
  public var isPermanent: Bool {
    switch self {
    case .unauthorized, .mountpointNotOffered, .redirected: return true
    default: return false
    }
  }

  public var description: String {
    switch self {
    case .unauthorized(let mountpoint):
      return "the caster refused the user name or password for \(mountpoint) (HTTP 401): check "
        + "the credentials (--ntrip-credentials FILE or SERIALGPS_NTRIP_CREDENTIALS, user:password)"
    case .mountpointNotOffered(let mountpoint, let offered, let more):
      if offered.isEmpty {
        return
          "the caster does not offer the mountpoint \(mountpoint), and its source table lists none"
      }
      let list = offered.joined(separator: ", ") + (more > 0 ? " and \(more) more" : "")
      return "the caster does not offer the mountpoint \(mountpoint); it offers: \(list)"
    case .redirected(let status, let location):
      return "the caster redirects (HTTP \(status))"
        + (location.map { " to \($0)" } ?? "")
        + "; redirects are not followed: give that address in --ntrip"
    case .refused(let status):
      return "the caster refused the request: \(status)"
    case .malformedResponse:
      return "the caster's answer is neither NTRIP nor HTTP (is this the caster's port?)"
    case .connectionFailed(let reason):
      return "cannot reach the caster: \(reason)"
    case .closedByCaster:
      return "the caster closed the connection"
    case .silent(let duration):
      return "the caster sent nothing for \(duration.components.seconds) s"
    }
  }
}

/// What a caster answers, as a pure machine fed the bytes as they come: the status line and
/// headers, then either the stream (NTRIP 1's `ICY 200 OK`, NTRIP 2's `HTTP/1.1 200 OK`,
/// chunked or not) or a source table (`SOURCETABLE 200 OK`, or `Content-Type:
/// gnss/sourcetable`), read to its end for the mountpoints it offers. Everything held is
/// bounded: the header, one source-table line, the names kept.
struct NTRIPResponseDecoder: Sendable {
  enum Output: Equatable {
    /// The stream begins (`chunked`: NTRIP 2 with chunked transfer coding).
    case streaming(version: Int, chunked: Bool)
    /// Body bytes of the stream, in order.
    case data(ArraySlice<UInt8>)
    /// The answer is final: no stream will come.
    case failure(NTRIPFailure)
  }

  /// The longest header accepted, status line included.
  static let maximumHeaderLength = 8192
  /// Mountpoints named in an error message.
  static let namesKept = 20

  private enum Phase {
    case header
    case stream(ChunkedDecoder?)
    case sourceTable
    case done
  }

  let mountpoint: String
  private var phase = Phase.header
  private var line: [UInt8] = []
  private var headerLength = 0
  private var status: (line: String, code: Int)?
  private var chunked = false
  private var isSourceTable = false
  private var location: String?
  private var offered: [String] = []
  private var offeredMore = 0

  init(mountpoint: String) { self.mountpoint = mountpoint }

  mutating func append(_ bytes: ArraySlice<UInt8>, output: (Output) -> Void) {
    var index = bytes.startIndex
    while index < bytes.endIndex {
      switch phase {
      case .header:
        let byte = bytes[index]
        index += 1
        headerLength += 1
        if headerLength > Self.maximumHeaderLength {
          return finish(.failure(.malformedResponse), output)
        }
        if byte == 0x0A {
          headerLine(output)
        } else if byte != 0x0D {
          line.append(byte)
        }
      case .stream(var chunks):
        let rest = bytes[index...]
        index = bytes.endIndex
        if chunks == nil {
          output(.data(rest))
          continue
        }
        do {
          try chunks!.append(rest) { output(.data($0)) }
          phase = .stream(chunks)
        } catch {
          return finish(.failure(.malformedResponse), output)
        }
      case .sourceTable:
        let byte = bytes[index]
        index += 1
        if byte == 0x0A {
          tableLine(output)
        } else if byte != 0x0D && line.count < 4096 {
          line.append(byte)
        }
      case .done:
        return
      }
    }
  }

  /// The connection ended. A source table without its end line still names what it listed;
  /// a status line without the empty line after its header (RTKLIB's caster answers a wrong
  /// password with `HTTP/1.0 401 Unauthorized` and closes) still says what it was.
  mutating func end(output: (Output) -> Void) {
    switch phase {
    case .sourceTable:
      finish(.failure(notOffered), output)
    case .header where status != nil:
      if !line.isEmpty { headerLine(output) }
      if case .header = phase { headerLine(output) }  // the empty line that never came
      if case .sourceTable = phase { finish(.failure(notOffered), output) }
    default:
      break
    }
  }

  private var notOffered: NTRIPFailure {
    .mountpointNotOffered(mountpoint: mountpoint, offered: offered, more: offeredMore)
  }

  private mutating func finish(_ last: Output, _ output: (Output) -> Void) {
    phase = .done
    output(last)
  }

  private mutating func headerLine(_ output: (Output) -> Void) {
    let text = String(decoding: line, as: UTF8.self)
    line.removeAll(keepingCapacity: true)
    guard let (statusLine, code) = status else {
      if text.hasPrefix("ICY 200") {
        // NTRIP 1: no headers follow; the stream starts after this line.
        phase = .stream(nil)
        output(.streaming(version: 1, chunked: false))
      } else if text.hasPrefix("SOURCETABLE 200") {
        status = (text, 200)
        isSourceTable = true
      } else if text.hasPrefix("HTTP/1."), let code = Int(text.dropFirst(9).prefix(3)) {
        status = (text, code)
      } else if text.isEmpty && headerLength <= 2 {
        return  // a stray line feed before the status line
      } else {
        finish(.failure(.malformedResponse), output)
      }
      return
    }
    if !text.isEmpty {
      guard let colon = text.firstIndex(of: ":") else { return }
      let name = text[..<colon].lowercased()
      let value = text[text.index(after: colon)...].trimmingSpaces
      switch name {
      case "transfer-encoding": chunked = value.lowercased().contains(substring: "chunked")
      case "content-type":
        if value.lowercased().hasPrefix("gnss/sourcetable") { isSourceTable = true }
      case "location": location = String(value.prefix(200))
      default: break
      }
      return
    }
    // The empty line: the header is whole.
    switch code {
    case 200 where isSourceTable:
      phase = .sourceTable
    case 200:
      phase = .stream(chunked ? ChunkedDecoder() : nil)
      output(.streaming(version: 2, chunked: chunked))
    case 401:
      finish(.failure(.unauthorized(mountpoint: mountpoint)), output)
    case 404:
      finish(.failure(.mountpointNotOffered(mountpoint: mountpoint, offered: [], more: 0)), output)
    case 300..<400:
      finish(.failure(.redirected(status: code, location: location)), output)
    default:
      finish(.failure(.refused(status: String(statusLine.prefix(100)))), output)
    }
  }

  private mutating func tableLine(_ output: (Output) -> Void) {
    let text = String(decoding: line, as: UTF8.self)
    line.removeAll(keepingCapacity: true)
    if text.hasPrefix("ENDSOURCETABLE") {
      return finish(.failure(notOffered), output)
    }
    guard text.hasPrefix("STR;") else { return }
    let name = text.dropFirst(4).prefix { $0 != ";" }
    guard !name.isEmpty else { return }
    if offered.count < Self.namesKept {
      offered.append(String(name.prefix(100)))
    } else {
      offeredMore += 1
    }
  }
}

extension Substring {
  var trimmingSpaces: Substring {
    var text = self
    while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
    while let last = text.last, last == " " || last == "\t" { text.removeLast() }
    return text
  }
}
