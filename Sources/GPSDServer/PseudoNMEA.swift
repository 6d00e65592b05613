import NMEA
import SerialGPS

/// NMEA for the watchers of a receiver whose epochs come without NMEA (one configured for
/// UBX output only), as gpsd makes pseudo-NMEA for a binary receiver: GGA and RMC with each
/// such fix, GSA and GSV with its satellite view (``NMEAEncoder``). A fix with any sentence
/// of its own gets none (``Fix/fromBinaryMessagesOnly``), so a stream that mixes NMEA and
/// UBX is never doubled. One per device for `"nmea":true` watchers, one for the NMEA socket.
struct PseudoNMEA {
  /// The last fix made from binary messages alone, for the satellite view of its epoch.
  private var binaryFix: Fix?

  /// The sentences `event` stands for, or `nil`: a replayed fix (an old epoch for a new
  /// subscription) and a view of another epoch than the fix's give none.
  mutating func sentences(for event: ReceiverEventOrRawData) -> [UInt8]? {
    switch event {
    case .event(.fix(let update)):
      guard !update.isReplay else { return nil }
      binaryFix = update.fix.fromBinaryMessagesOnly ? update.fix : nil
      guard let fix = binaryFix else { return nil }
      var bytes: [UInt8] = []
      bytes.reserveCapacity(2 * NMEAEncoder.maximumLength)
      NMEAEncoder.appendGGA(fix, to: &bytes)
      NMEAEncoder.appendRMC(fix, to: &bytes)
      return bytes
    case .event(.satellites(let view)):
      guard let fix = binaryFix, view.time == nil || view.time == fix.time else { return nil }
      binaryFix = nil
      var bytes: [UInt8] = []
      bytes.reserveCapacity(10 * NMEAEncoder.maximumLength)
      NMEAEncoder.appendGSA(fix, satellites: view, to: &bytes)
      NMEAEncoder.appendGSV(view, to: &bytes)
      return bytes
    case .event(.status), .rawData, .sentences:
      return nil
    }
  }
}
