import NMEA

/// What the sentences of one epoch said about time: the raw material of the trust rules.
///
/// Built by ``EpochTimeCollector`` from the decoder's events, so that the rules see exactly
/// what the receiver wrote in this epoch: a date carried over from an earlier epoch, or a fix
/// the fix builder merged from several sentences, does not count.
public struct EpochTime: Sendable, Hashable {
  /// The epoch's UTC time of day (`nil` when the receiver gave none).
  public var time: UTCTime?
  /// The date from this epoch's own RMC or ZDA.
  public var date: UTCDate?
  /// Where ``date`` came from.
  public var dateSource: DateSource?
  /// Whether the receiver said it had a fix.
  public var fix: FixValidity

  /// A sentence that carries a full date.
  public enum DateSource: Sendable, Hashable {
    case rmc
    case zda
  }

  /// The receiver's own word on its fix in this epoch.
  public enum FixValidity: Sendable, Hashable {
    /// RMC status `A` (with a valid mode indicator when it has one) or GGA quality 1–6, and no
    /// sentence of the epoch saying otherwise.
    case valid
    /// RMC status `V`, an RMC mode indicator `N`, `M` or `S`, or GGA quality 0, 7 or 8 — also
    /// when another sentence of the same epoch claims a fix: a receiver that contradicts
    /// itself is not trusted with the time.
    case invalid
    /// Neither RMC status nor GGA quality was given.
    case unknown
  }

  public init(
    time: UTCTime?, date: UTCDate? = nil, dateSource: DateSource? = nil,
    fix: FixValidity = .unknown
  ) {
    self.time = time
    self.date = date
    self.dateSource = dateSource
    self.fix = fix
  }

  /// Date and time together, when both are known.
  public var timestamp: UTCTimestamp? {
    guard let date, let time else { return nil }
    return UTCTimestamp(date: date, time: time)
  }
}

/// Gathers, from the decoder's events, what each epoch's sentences said about time.
///
/// The reader feeds it every event of its `NMEADecoder` (``observe(_:)``); for each `.epoch`
/// event it returns that epoch's ``EpochTime``. Sentences are matched to the epoch by their
/// UTC time, not by their order, because the decoder reports the sentence that begins epoch
/// N + 1 before it emits epoch N when it closes epochs on a change of time. A value type of
/// fixed size: nothing is allocated per sentence.
public struct EpochTimeCollector: Sendable {
  private struct Evidence: Sendable {
    var time: UTCTime
    var date: UTCDate?
    var dateSource: EpochTime.DateSource?
    var sawValid = false
    var sawInvalid = false
  }

  // The last few times seen, newest last; an epoch's sentences are never further apart.
  private var recent: [Evidence] = []
  private static let remembered = 4

  public init() {
    recent.reserveCapacity(Self.remembered)
  }

  /// Takes one decoder event. For an `.epoch` it returns what that epoch said about time;
  /// other events return `nil`.
  public mutating func observe(_ event: DecoderEvent) -> EpochTime? {
    switch event {
    case .sentence(let sentence):
      add(sentence)
      return nil
    case .epoch(let epoch):
      return time(of: epoch)
    case .parseError, .ubx, .ubxMessage, .ubxRejected, .sirf, .casic:
      return nil
    }
  }

  /// Takes one parsed sentence (RMC, GGA and ZDA count; others are ignored).
  public mutating func add(_ sentence: Sentence) {
    switch sentence {
    case .rmc(let rmc):
      guard let time = rmc.time else { return }
      update(time) { evidence in
        if let date = rmc.date {
          evidence.date = date
          evidence.dateSource = .rmc
        }
        switch rmc.isValid {
        case true?:
          if let mode = rmc.mode, !mode.isValid {
            evidence.sawInvalid = true
          } else {
            evidence.sawValid = true
          }
        case false?: evidence.sawInvalid = true
        case nil: break
        }
      }
    case .gga(let gga):
      guard let time = gga.time, let quality = gga.quality else { return }
      update(time) { evidence in
        if (1...6).contains(quality.rawValue) {
          evidence.sawValid = true
        } else {
          evidence.sawInvalid = true
        }
      }
    case .zda(let zda):
      guard let time = zda.time, let date = zda.date else { return }
      update(time) { evidence in
        // RMC's date wins when both are given; they agree on a sane receiver.
        if evidence.dateSource == nil {
          evidence.date = date
          evidence.dateSource = .zda
        }
      }
    default:
      return
    }
  }

  /// What the sentences stamped with `epoch`'s time said.
  public func time(of epoch: Epoch) -> EpochTime {
    guard let time = epoch.fix.time else { return EpochTime(time: nil) }
    guard let evidence = recent.last(where: { $0.time == time }) else {
      return EpochTime(time: time)
    }
    let fix: EpochTime.FixValidity =
      evidence.sawInvalid ? .invalid : evidence.sawValid ? .valid : .unknown
    return EpochTime(
      time: time, date: evidence.date, dateSource: evidence.dateSource, fix: fix)
  }

  /// Forgets everything (the port was reopened).
  public mutating func reset() {
    recent.removeAll(keepingCapacity: true)
  }

  private mutating func update(_ time: UTCTime, _ change: (inout Evidence) -> Void) {
    if let index = recent.lastIndex(where: { $0.time == time }) {
      change(&recent[index])
      return
    }
    if recent.count == Self.remembered { recent.removeFirst() }
    var evidence = Evidence(time: time)
    change(&evidence)
    recent.append(evidence)
  }
}
