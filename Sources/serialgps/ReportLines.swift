import GPSDProtocol
import NMEA

/// The gpsd reports that `decode --json` and `watch --json` print, one per line, written by
/// GPSDProtocol's encoder: the one `serve` sends its clients.
///
/// A report says the epoch and only what is given here besides, so the same epoch gives the
/// same line in every command; where two commands' lines differ, these inputs differ.
struct ReportLines {
  /// The `device` member: the receiver's path for `watch`, as `serve` and gpsd send it; none
  /// for `decode`, whose recording is not a device, unless `--device` names one.
  var device: String?
  /// GPS−UTC leap seconds (`leapseconds`), once the receiver has them from the satellites
  /// (u-blox `$PUBX,04`). `decode` follows them in the recording; the driver hands its
  /// subscribers fixes, not sentences, so `watch` has none.
  var leapSeconds: Int?
  private var writer = JSONWriter(capacity: 4096)

  init(device: String? = nil) {
    self.device = device
  }

  /// The TPV report of `fix`, with its newline.
  mutating func tpv(_ fix: Fix) -> [UInt8] {
    writer.removeAll()
    writer.tpv(fix, device: device, leapSeconds: leapSeconds)
    writer.newline()
    return writer.bytes
  }

  /// The SKY report of an epoch's satellites, stamped with the epoch's time, with its newline.
  mutating func sky(_ view: SatelliteView, of fix: Fix) -> [UInt8] {
    writer.removeAll()
    writer.sky(view, time: fix.timestamp, satellitesUsed: fix.satellitesUsed, device: device)
    writer.newline()
    return writer.bytes
  }
}
