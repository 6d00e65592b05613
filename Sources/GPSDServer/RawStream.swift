import NMEA

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

/// What the raw port's writer sends, on its way to the receiver, as a state machine with no
/// I/O: who may write (``RawWriterSlot``), and its bytes framed by the reader's own framer
/// (``NMEAFramer``: NMEA sentences with a valid checksum, UBX and SiRF binary frames, RTCM 3
/// corrections with a valid CRC-24Q), so that only whole sentences and frames reach the
/// receiver. A frame is handed on whole or not at all, so the driver's own commands, written
/// between two of the writer's batches, never land inside one. What is not a whole frame
/// (noise, a bad checksum or CRC, the start of a frame when the writer leaves) is dropped and
/// counted.
///
/// The bound: the whole frames waiting for the receiver are at most ``limit`` bytes, after
/// which the loop stops reading the writer's socket (``reads(_:)``) until the receiver has
/// written them; one batch at a time (at most ``batchLimit`` bytes, or one larger frame) is
/// with the receiver. When the writer leaves, what waits is dropped: only the batch already
/// handed on is still written, whole.
struct RawWriteQueue {
  enum Action: Equatable {
    /// Hand `bytes` (whole sentences and frames) to the receiver; ``written(_:)`` with
    /// `batch` once it has written them (or dropped them, not being open).
    case write([UInt8], batch: Int)
    /// Drop connection `id`'s bytes and tell it once why (``RawWriterSlot/notice(_:)``).
    case refuse(id: Int, RawWriterSlot.Refusal)
  }

  struct Counters: Equatable {
    /// Bytes of whole sentences and frames handed to the receiver.
    var bytesForwarded = 0
    /// Bytes writers sent that were not handed on: not part of a whole sentence or frame,
    /// or still waiting when their writer left.
    var bytesDropped = 0
  }

  /// Whole frames waiting past which the writer's socket is not read.
  let limit: Int
  /// The most bytes handed to the receiver at a time (a larger frame goes alone).
  let batchLimit: Int
  private(set) var slot: RawWriterSlot
  private(set) var counters = Counters()
  private var framer: NMEAFramer
  /// Whole frames waiting, oldest first from `head`.
  private var frames: [[UInt8]] = []
  private var head = 0
  /// Bytes in `frames` from `head`.
  private(set) var queued = 0
  /// The batch the receiver has and has not said it wrote.
  private(set) var inFlight: Int?
  private var nextBatch = 1

  /// `maximumFrameLength`: the longest binary frame passed on (the framer's bound on what it
  /// holds of an unfinished one); sentences up to 256 bytes.
  init(
    writable: Bool, limit: Int = 64 * 1024, batchLimit: Int = 1024,
    maximumFrameLength: Int = 16 * 1024
  ) {
    slot = RawWriterSlot(writable: writable)
    self.limit = max(1, limit)
    self.batchLimit = max(1, batchLimit)
    framer = NMEAFramer(
      configuration: FramerConfiguration(
        maximumSentenceLength: 256, maximumBinaryFrameLength: maximumFrameLength))
  }

  /// What the framer refused of the writers' bytes, by reason.
  var framing: FramerStatistics { framer.statistics }

  /// Whether the loop should read connection `id` now: every connection but a writer whose
  /// frames fill the queue.
  func reads(_ id: Int) -> Bool { !(slot.writer == id && queued >= limit) }

  /// Connection `id` (at `peer`) sent `bytes`.
  mutating func input(from id: Int, peer: String, _ bytes: UnsafeRawBufferPointer) -> [Action] {
    switch slot.input(from: id, peer: peer) {
    case .drop:
      return []
    case .refuse(let refusal):
      return [.refuse(id: id, refusal)]
    case .write:
      let before = framer.bytesInProgress
      var framed = 0
      var found: [[UInt8]] = []
      framer.feed(bytes) { frame in
        let whole = frame.bytes
        framed += whole.count
        found.append(whole)
      }
      frames += found
      queued += framed
      // A sentence that came with LF alone goes on with CR LF: never counted below zero.
      counters.bytesDropped += max(0, bytes.count + before - framer.bytesInProgress - framed)
      return next()
    }
  }

  /// The receiver wrote (or dropped) batch `batch`.
  mutating func written(_ batch: Int) -> [Action] {
    guard inFlight == batch else { return [] }
    inFlight = nil
    return next()
  }

  /// Connection `id` closed: if it was the writer, what it sent that waits is dropped, and so
  /// is a frame it left unfinished.
  mutating func left(_ id: Int) {
    let wasWriter = slot.writer == id
    slot.left(id)
    guard wasWriter else { return }
    counters.bytesDropped += queued + framer.bytesInProgress
    frames.removeAll()
    head = 0
    queued = 0
    framer.reset()
  }

  /// The receiver the writes go to changed (the one served first went away): a batch the old
  /// one had is not waited for.
  mutating func receiverChanged() -> [Action] {
    inFlight = nil
    return next()
  }

  private mutating func next() -> [Action] {
    guard inFlight == nil, head < frames.count else { return [] }
    var batch: [UInt8] = []
    while head < frames.count, batch.isEmpty || batch.count + frames[head].count <= batchLimit {
      batch += frames[head]
      frames[head] = []
      head += 1
    }
    if head == frames.count {
      frames.removeAll(keepingCapacity: frames.capacity <= 256)
      head = 0
    } else if head * 2 >= frames.count {
      frames.removeFirst(head)
      head = 0
    }
    queued -= batch.count
    counters.bytesForwarded += batch.count
    let number = nextBatch
    nextBatch += 1
    inFlight = number
    return [.write(batch, batch: number)]
  }
}
