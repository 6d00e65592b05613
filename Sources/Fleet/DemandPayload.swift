import GPSDProtocol
import SerialGPS

/// What a retained message on `serialgps/<id>/demand/<consumer>` says: the one parse of a
/// demand's payload (docs/fleet.md, "Demand payloads").
///
/// The documented forms only: empty (withdrawn), `1` (continuous positions), and a JSON
/// object, the request form (`{"consumer":"truck-app"}`, as ``RemoteReceiver`` writes it),
/// which may carry a location request's terms: `interval` (seconds) and `accuracy` (metres),
/// both numbers above 0 (`{"interval":60,"accuracy":20}`; docs/requests.md).
/// Anything else — `0`, `false`, `-1`, `" "`, binary, oversized — is invalid and withdraws
/// that consumer's demand: power follows what the broker holds now, so a bridge that
/// restarts decides as the one that ran.
enum DemandPayload: Sendable, Hashable {
  /// The consumer wants every fix while the demand stands.
  case continuous
  /// The consumer wants fixes as the request says (an interval, an accuracy).
  case request(LocationRequest)
  /// The consumer wants nothing (the empty message: its withdrawal or its Last Will).
  case withdrawn
  /// Not a demand; the reason is for the operator.
  case invalid(DemandRefusal)

  /// The members a request object may carry; any other refuses it (never taken as
  /// continuous).
  static let requestMembers: Set<String> = ["consumer", "interval", "accuracy"]

  /// Reads a demand's payload; anything over `maximumSize` bytes is refused unread.
  static func parse(_ payload: [UInt8], maximumSize: Int) -> DemandPayload {
    guard payload.count <= maximumSize else {
      return .invalid(.oversized(bytes: payload.count, limit: maximumSize))
    }
    if payload.isEmpty { return .withdrawn }
    if payload == [UInt8(ascii: "1")] { return .continuous }
    guard !payload.contains(0), String(validating: payload, as: UTF8.self) != nil else {
      return .invalid(.notText)
    }
    guard let first = payload.first(where: { !Self.isSpace($0) }), first == UInt8(ascii: "{")
    else { return .invalid(.notADemand(Self.excerpt(payload))) }
    switch JSONReader.read(payload) {
    case .incomplete:
      return .invalid(.badRequest("the JSON object is not closed"))
    case .invalid(let message):
      return .invalid(.badRequest(message))
    case .value(let value, let end):
      guard payload[end...].allSatisfy(Self.isSpace) else {
        return .invalid(.badRequest("text after the JSON object"))
      }
      guard case .object(let members) = value else {
        return .invalid(.notADemand(Self.excerpt(payload)))
      }
      var request = LocationRequest()
      for member in members {
        switch (member.key, member.value) {
        case ("consumer", .string):
          break
        case ("consumer", _):
          return .invalid(.badRequest("'consumer' must be a string"))
        case ("interval", .number(let seconds)) where seconds <= 86_400 * 7:
          guard let interval = LocationRequest.duration(seconds: seconds) else {
            return .invalid(.badRequest(Self.badInterval))
          }
          request.interval = interval
        case ("interval", _):
          return .invalid(.badRequest(Self.badInterval))
        case ("accuracy", .number(let metres)) where metres > 0 && metres.isFinite:
          request.accuracy = metres
        case ("accuracy", _):
          return .invalid(.badRequest("'accuracy' must be a number of metres above 0"))
        default:
          return .invalid(
            .badRequest(
              "unknown member '\(Self.excerpt(Array(member.key.utf8)))' (a request may carry "
                + "consumer, interval and accuracy)"))
        }
      }
      return request == LocationRequest() ? .continuous : .request(request)
    }
  }

  static let badInterval =
    "'interval' must be a number of seconds from 0.001 up to a week"

  private static func isSpace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
  }

  /// The start of a payload, for a message: at most 32 bytes.
  private static func excerpt(_ payload: [UInt8]) -> String {
    let text = String(decoding: payload.prefix(32), as: UTF8.self)
    return payload.count > 32 ? text + "…" : text
  }
}

/// Why a demand payload is not one.
enum DemandRefusal: Sendable, Hashable, CustomStringConvertible {
  /// Larger than the bridge reads.
  case oversized(bytes: Int, limit: Int)
  /// Not UTF-8 text, or text with a NUL.
  case notText
  /// Text that is neither `1` nor a JSON object.
  case notADemand(String)
  /// A JSON object that is not a request the bridge serves.
  case badRequest(String)

  var description: String {
    switch self {
    case .oversized(let bytes, let limit):
      return "the payload is \(bytes) bytes, over the \(limit) a demand may have"
    case .notText:
      return "the payload is not UTF-8 text"
    case .notADemand(let text):
      return "'\(text)' is not a demand: publish 1, or a JSON request such as "
        + "{\"consumer\":\"name\"} (an empty message withdraws)"
    case .badRequest(let problem):
      return "not a request this bridge serves: \(problem)"
    }
  }
}
