/// What a stream port's connection gets of the first receiver served, for as long as it is
/// connected (a continuous subscription).
enum StreamKind: Equatable {
  /// The bytes exactly as read (`serve --raw-listen`).
  case raw
  /// The NMEA sentences the reader framed, checksum-checked, with their CR LF
  /// (`serve --nmea-socket`, for GeoClue's `network-nmea` source).
  case nmea

  /// The port's name in log messages.
  var name: String { self == .raw ? "raw port" : "NMEA socket" }
}

/// Who may write to the receiver through the raw port (`serve --raw-listen`, `--raw-write`),
/// as a state machine with no I/O: at most one connection at a time, the first that sends
/// bytes, until it leaves; the others' bytes are dropped and each is told so once, and so is
/// every connection when the port is read-only. The event loop runs its answers.
struct RawWriterSlot {
  enum Decision: Equatable {
    /// Write these bytes to the receiver.
    case write
    /// Drop them; tell the sender once (the message is ``notice(_:)``'s).
    case refuse(Refusal)
    /// Drop them; the sender was told already.
    case drop
  }

  enum Refusal: Equatable {
    case readOnly
    /// Another connection writes, named by its peer.
    case taken(by: String)
  }

  let writable: Bool
  /// The connection that writes now.
  private(set) var writer: Int?
  private var writerPeer = ""
  /// Connections told already (each is told once).
  private var told: Set<Int> = []

  init(writable: Bool) { self.writable = writable }

  /// Connection `id` (at `peer`) sent bytes.
  mutating func input(from id: Int, peer: String) -> Decision {
    if writable && (writer == nil || writer == id) {
      if writer == nil {
        writer = id
        writerPeer = peer
        // One refused before, now the writer: told nothing more, as it may write.
        told.remove(id)
      }
      return .write
    }
    guard told.insert(id).inserted else { return .drop }
    return .refuse(writable ? .taken(by: writerPeer) : .readOnly)
  }

  /// Connection `id` closed: if it wrote, the next to send bytes may.
  mutating func left(_ id: Int) {
    told.remove(id)
    if writer == id {
      writer = nil
      writerPeer = ""
    }
  }

  /// The line a refused connection gets in its stream (the raw stream carries the receiver's
  /// bytes; a tool that shows them shows this too).
  static func notice(_ refusal: Refusal) -> String {
    switch refusal {
    case .readOnly:
      return "serialgps: this raw port is read-only, the bytes sent were dropped; "
        + "serve --raw-write lets one connection at a time write to the receiver\r\n"
    case .taken(let peer):
      return "serialgps: the receiver is taken: \(peer) writes to it; the bytes sent were "
        + "dropped, and the first to send after it leaves may write\r\n"
    }
  }
}
