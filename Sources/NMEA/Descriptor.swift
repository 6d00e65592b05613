/// What the code knows about one kind of sentence, in one place: its place in the receiver's
/// cycle, its time, its key and how it joins a fix. Every sentence type conforms, an NMEA
/// sentence through ``NMEASentenceDescriptor`` (found by its address, read from its fields), a
/// binary message through ``BinaryMessageDescriptor`` (found by its class and ID, read from its
/// payload); ``SentenceRegistry`` is the one table that finds them. The fix builder knows no
/// sentence type: it asks the descriptor (docs/nmea.md, "Descriptors").
///
/// Adding a sentence type is one conformance (the value, a sample above its parser, its
/// parse, role and merge), one row of the registry, the ``Fix`` fields it fills and the report
/// members that print them.
protocol SentenceDescriptor {
  /// The type's place in the receiver's measurement cycle.
  static var role: CycleRole { get }

  /// The UTC time of day the sentence carries, `nil` when it carries none (or when the field
  /// was empty). For a ``CycleRole/position`` or ``CycleRole/timeOnly`` sentence the time is
  /// its key: an impossible one makes the whole sentence meaningless, so the parser refuses
  /// the sentence rather than drop the field.
  var time: UTCTime? { get }

  /// The GPS time of week, milliseconds, for a message that carries it rather than a UTC
  /// time (u-blox binary `iTOW`). The fix builder turns it into a UTC time of day with the
  /// leap seconds it knows (``FixBuilder/leapSeconds``); until it knows them the message is
  /// untimed. `nil` (the default) for every NMEA sentence.
  var timeOfWeek: UInt32? { get }

  /// GPS − UTC leap seconds the message states or implies (NAV-TIMEGPS's `leapS`, the
  /// difference between NAV-PVT's or NAV-TIMEUTC's own valid UTC and its `iTOW`, PUBX,04's
  /// when not the firmware's default): the fix builder keeps the last one to turn times of
  /// week into UTC. `nil` (the default) for a type that says nothing of them.
  var statedLeapSeconds: Int? { get }

  /// Whether the type marks the end of the receiver's epoch (UBX NAV-EOE): the epoch in
  /// progress closes after it, with no cycle to learn. `false` (the default) for the others.
  static var endsEpoch: Bool { get }

  /// Whether the type is an NMEA sentence (``Fix/fromBinaryMessagesOnly``); `false` for a binary
  /// message.
  static var isSentence: Bool { get }

  /// The sentence's key in the cycle: its kind, talker and variant (``CycleKey``).
  var cycleKey: CycleKey { get }

  /// Merges what the sentence says into the fix builder: into the epoch in progress
  /// (``FixBuilder/epoch``), or for a ``CycleRole/setting`` into the settings every later fix
  /// carries. Impossible fields are already absent; what a merge decides is what a present
  /// value means beside the others (a position of a sentence that says it has no fix is no
  /// position) and which source wins (``PositionSource``, ``AccuracySource``).
  func merge(into builder: inout FixBuilder)
}

extension SentenceDescriptor {
  var timeOfWeek: UInt32? { nil }
  var statedLeapSeconds: Int? { nil }
  static var endsEpoch: Bool { false }
  static var isSentence: Bool { false }
}

/// An NMEA sentence type: found by its address, parsed in place from its comma-separated
/// fields, without allocating (except types that carry text or a list).
protocol NMEASentenceDescriptor: SentenceDescriptor {
  /// The address the registry finds the type by: the three letters after the talker for a
  /// standard sentence (`GGA`), the whole address for a proprietary one (`PGRME`), with the
  /// first field when that names the message (`PUBX,00`).
  static var address: SentenceAddress { get }

  /// A sentence of `talker` with no fields yet, for ``parse(_:commas:into:)`` to fill.
  init(talker: Talker)

  /// Reads the fields after the address (after the message field for `PUBX,nn`); `commas` is
  /// their number. An empty field is `nil`; a field that holds something its type cannot be
  /// throws ``NMEAParseError/badField(index:)``; a well-formed value no receiver can mean is
  /// left `nil` and counted by the reader (``FieldReader/drop(_:)``), the rest of the sentence
  /// standing.
  static func parse(_ fields: inout FieldReader, commas: Int, into sentence: inout Self)
    throws(NMEAParseError)

  /// The sentence as a ``Sentence``, for an event or a caller that wants one.
  var sentence: Sentence { get }
}

extension NMEASentenceDescriptor {
  static var isSentence: Bool { true }
  /// A type without a talker (proprietary) has one key: its address.
  var cycleKey: CycleKey { CycleKey(Self.address) }
}

/// A binary message type (u-blox UBX): found by its class and message ID, parsed from its
/// payload (the bytes between the length and the checksum), merged into the same fix
/// builder as the NMEA sentences. Its ``SentenceDescriptor/cycleKey`` is
/// `CycleKey(SentenceAddress(binaryClass:id:))`; its time is usually
/// ``SentenceDescriptor/timeOfWeek``; its merge ranks its figures with
/// ``PositionSource/binarySolution`` and ``AccuracySource/binarySolution``.
protocol BinaryMessageDescriptor: SentenceDescriptor {
  /// The message class (UBX `NAV` is `0x01`).
  static var messageClass: UInt8 { get }
  /// The message ID within its class (UBX `NAV-PVT` is `0x07`).
  static var messageID: UInt8 { get }
  /// The message read from its payload; `nil` when the payload is not one of the type's
  /// lengths (a structure that does not parse). Values no receiver can mean are left out
  /// field by field, as for NMEA.
  init?(payload: UnsafeRawBufferPointer)
}

/// A sentence type's place in the receiver's measurement cycle: how the fix builder groups it
/// into epochs (gpsd's `nmea_phrase` table keeps the same knowledge as a cycle flag per row).
enum CycleRole: Sendable, Hashable {
  /// Carries an epoch's position and normally its time (GGA, RMC, GLL, GNS, PUBX,00): the
  /// same kind seen again, even without a time, begins a new cycle; the learned end of a
  /// cycle closes an epoch only once one of these has come.
  case position
  /// Carries fix data but no time (GSA, GSV, VTG, PUBX,03, PGRMZ): joins the epoch in
  /// progress.
  case untimed
  /// Carries a time, a date or error estimates, nothing of the position (ZDA, GST, GBS, GRS,
  /// PUBX,04, PGRME): an epoch of these alone is not a fix, and a time from these alone gives
  /// way to an earlier position sentence's (a ZDA running ahead).
  case timeOnly
  /// A receiver setting (DTM, PGRMM): kept in every later fix until changed, whichever epoch
  /// it arrives in, and no part of any cycle.
  case setting
  /// Nothing for a fix (TXT, MediaTek's replies, unknown sentences).
  case none
}

/// Where a sentence type is found, packed into one integer so that the registry's dispatch
/// is a comparison per row: up to three letters of a standard type, or up to eight bytes of a
/// proprietary address, or a binary message's class and ID, each kind flagged apart.
struct SentenceAddress: Hashable, Sendable, ExpressibleByStringLiteral,
  CustomStringConvertible
{
  let code: UInt64

  static let proprietaryFlag: UInt64 = 1 << 63
  static let binaryFlag: UInt64 = 1 << 62

  init(code: UInt64) { self.code = code }

  /// `GGA` (a standard type, three letters) or `PGRME`, `PUBX,00` (proprietary, up to eight
  /// bytes, `P` first).
  @inline(__always)
  init(stringLiteral text: StaticString) {
    let bytes = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
    self.init(bytes)
  }

  /// The address of `bytes`: standard when they are three bytes, proprietary when they begin
  /// with `P` (bytes past the eighth are ignored).
  @inline(__always)
  init(_ bytes: UnsafeBufferPointer<UInt8>) {
    var packed: UInt64 = 0
    for index in 0..<min(bytes.count, 8) { packed = packed << 8 | UInt64(bytes[index]) }
    let isProprietary = bytes.count != 3 || bytes.first == 0x50
    code = isProprietary ? packed | Self.proprietaryFlag : packed
  }

  /// A standard type from its three letters packed (`0x474741` is `GGA`).
  @inline(__always)
  init(standard letters: UInt32) { code = UInt64(letters) }

  /// A binary message by class and ID.
  init(binaryClass messageClass: UInt8, id: UInt8) {
    code = Self.binaryFlag | UInt64(messageClass) << 8 | UInt64(id)
  }

  var description: String {
    if code & Self.binaryFlag != 0 {
      return "binary \(code >> 8 & 0xFF)/\(code & 0xFF)"
    }
    var bytes: [UInt8] = []
    var rest = code & ~Self.proprietaryFlag
    while rest != 0 {
      bytes.insert(UInt8(rest & 0xFF), at: 0)
      rest >>= 8
    }
    return String(decoding: bytes, as: UTF8.self)
  }
}

/// A sentence's identity within the cycle, for learning which sentence ends it: the type's
/// address, the talker (a `GPGSA` and a `GLGSA` are different sentences of one cycle) and a
/// variant the type chooses (GSV: last part or not; GSA: the system). Exact for standard
/// sentences; proprietary and binary ones have no talker and no variant.
struct CycleKey: Hashable, Sendable {
  let rawValue: UInt64

  init(rawValue: UInt64) { self.rawValue = rawValue }

  /// No sentence (before the first).
  static var none: CycleKey { CycleKey(rawValue: 0) }

  @inline(__always)
  init(_ address: SentenceAddress, talker: Talker = .proprietary, variant: UInt8 = 0) {
    rawValue = address.code ^ (UInt64(talker.rawValue) << 40 | UInt64(variant) << 32)
  }
}

/// Which sentence's position an epoch keeps when several give one, best last: a source
/// replaces the position of a lower one, never of a higher one, whatever the order in which
/// the sentences come. The same ranks decide the altitude (``EpochInProgress/takeAltitude``)
/// and the speed and course (``EpochInProgress/takeMotion``), each apart: GGA's altitude
/// over none, NAV-PVT's millimetres over GGA's decimetres; RMC's and VTG's knots rank as
/// ``recommendedMinimum``, a binary solution's mm/s above them.
enum PositionSource: UInt8, Comparable, Sendable {
  case none = 0
  /// GLL: a position and nothing else.
  case positionOnly = 1
  /// RMC and PUBX,00: a position with motion.
  case recommendedMinimum = 2
  /// GGA and GNS: a position with its altitude and quality (AC12 writes five decimals of
  /// minutes in GGA and four in RMC).
  case fixData = 3
  /// A u-blox binary navigation solution (NAV-PVT, NAV-POSLLH, NAV-SOL's ECEF position):
  /// 1e-7° and millimetres, over any NMEA sentence's rounding.
  case binarySolution = 4
  /// u-blox's high-precision solution (NAV-HPPOSLLH): 1e-9° and 0.1 mm, over NAV-PVT's
  /// rounding of the same solution.
  case highPrecisionSolution = 5

  static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Which messages an epoch's satellite view (SKY) lists when several list satellites, best
/// last: a source replaces the list of a lower one, is ignored beside a higher one, and adds
/// to the list of its own rank (GSV's parts, one per system and signal). NAV-SAT and
/// NAV-SVINFO say for each satellite whether it was used, its residual, quality and health,
/// in u-blox's own numbering, so they rank over GSV (no used flag: GSA's twelve IDs mark
/// them); GSV ranks over NAV-SIG, which gives no elevation or azimuth. A receiver that sends
/// GSV and NAV-SAT for one epoch so gives one list, never both.
enum SatelliteSource: UInt8, Comparable, Sendable {
  case none = 0
  /// NAV-SIG: signals, merged into one entry per satellite.
  case binarySignals = 1
  /// NMEA GSV, its used satellites from GSA.
  case nmea = 2
  /// NAV-SAT (u-blox 8 and later) and NAV-SVINFO (u-blox 6 and older).
  case binarySatellites = 3

  static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Which source an epoch's error estimates come from, best last, as ``PositionSource`` ranks
/// positions: the horizontal, vertical and spherical estimates are each replaced only by a
/// source at least as good, whatever the order of sentences. None is derived from DOPs (gpsd
/// multiplies HDOP by an assumed range error; the receiver's own figures or nothing).
enum AccuracySource: UInt8, Comparable, Sendable {
  case none = 0
  /// GBS: the expected errors of the receiver's fault detection (RAIM).
  case faultDetection = 1
  /// GST, `$PGRME`, PUBX,00: the receiver's own error estimates of its solution.
  case receiverEstimate = 2
  /// A u-blox binary navigation solution's `hAcc` / `vAcc` (NAV-PVT, NAV-POSLLH).
  case binarySolution = 3

  static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
