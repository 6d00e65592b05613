/// The MQTT topics of one receiver: layout version 1 (docs/fleet.md).
///
/// ```
/// serialgps/<id>/tpv                 gpsd TPV JSON, retained, expires with the replay expiry
/// serialgps/<id>/sky                 gpsd SKY JSON, retained, expires likewise
/// serialgps/<id>/status              retained text; "offline" is the bridge's Last Will
/// serialgps/<id>/demand/<consumer>   retained, non-empty: a consumer wants positions;
///                                    empty retained (also its Last Will): it no longer does
/// ```
public struct FleetTopics: Sendable, Hashable {
  /// The first level of every topic.
  public static let root = "serialgps"
  /// The layout's version, carried by every status message as the MQTT 5 user property
  /// ``layoutProperty``. A future layout that is not compatible gets a new root.
  public static let layoutVersion = 1
  public static let layoutProperty = "serialgps-topics"

  /// The receiver's name in its topics.
  public let id: String

  /// `id` must be a valid topic level (see ``isValidName(_:)``).
  public init(id: String) throws(FleetError) {
    guard Self.isValidName(id) else {
      throw FleetError(
        "'\(id)' cannot name a receiver in MQTT topics: use 1 to 64 letters, digits, '-', '_' "
          + "or '.'", kind: .configuration)
    }
    self.id = id
  }

  public var tpv: String { "\(Self.root)/\(id)/tpv" }
  public var sky: String { "\(Self.root)/\(id)/sky" }
  public var status: String { "\(Self.root)/\(id)/status" }
  /// What the bridge subscribes to: every consumer's demand for this receiver.
  public var demands: String { "\(Self.root)/\(id)/demand/+" }

  public func demand(consumer: String) -> String { "\(Self.root)/\(id)/demand/\(consumer)" }

  /// The consumer a demand topic of this receiver names, or `nil` for any other topic.
  public func consumer(inDemandTopic topic: String) -> String? {
    let prefix = "\(Self.root)/\(id)/demand/"
    guard topic.hasPrefix(prefix) else { return nil }
    let consumer = topic.dropFirst(prefix.utf8.count)
    guard !consumer.isEmpty, !consumer.contains("/") else { return nil }
    return String(consumer)
  }

  /// Receiver and consumer names: 1 to 64 of `A–Z a–z 0–9 - _ .`, so that they are one topic
  /// level, never a wildcard, and read the same in every ACL and shell.
  public static func isValidName(_ name: String) -> Bool {
    let bytes = name.utf8
    guard (1...64).contains(bytes.count) else { return false }
    return bytes.allSatisfy { byte in
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"),
        UInt8(ascii: "."):
        return true
      default:
        return false
      }
    }
  }

  /// `text` made into a valid name: other characters become `_`, and it is cut to 64; `nil`
  /// when nothing is left.
  public static func name(from text: String) -> String? {
    var bytes: [UInt8] = []
    for byte in text.utf8.prefix(64) {
      let allowed = isValidName(String(decoding: [byte], as: UTF8.self))
      bytes.append(allowed ? byte : UInt8(ascii: "_"))
    }
    let name = String(decoding: bytes, as: UTF8.self)
    return name.isEmpty || bytes.allSatisfy({ $0 == UInt8(ascii: "_") }) ? nil : name
  }
}

/// What `serialgps/<id>/status` says.
public enum FleetStatus: String, Sendable, Hashable, CaseIterable {
  /// A consumer's demand arrived and the receiver is being woken.
  case poweringOn = "powering on"
  /// Fixes are being published.
  case streaming
  /// The receiver is on and talking but has no position yet.
  case noFix = "no fix"
  /// Nobody wants positions: the bridge publishes nothing and the receiver is in standby (or
  /// lingering towards it, or used by local clients only).
  case standby
  /// The receiver is unplugged or cannot be opened; the board is still online.
  case disconnected
  /// The bridge is gone: stopped cleanly, or its Last Will after losing power or network.
  case offline
}
