import NMEA

/// Active identification: what to write to a receiver that listening has not identified,
/// for a user who named the device and asked for it (`chipset: .probe`, `--chipset probe`).
///
/// Passive identification never writes. The probe does, so it sends only polls that one
/// family answers and every other receiver ignores as input it does not speak: u-blox
/// `UBX-MON-VER` (answered by `UBX-MON-VER`: software, hardware, `PROTVER`, `MOD`) and MediaTek
/// `$PMTK605` (PMTK_Q_RELEASE, answered by `$PMTK705`: release, build, model). Neither
/// changes any setting. The answer reaches the caller's ``ChipsetIdentifier`` as any other
/// frame does, and the identification it makes ends the exchange
/// (``AcknowledgementExpectation/identification``).
///
/// SiRF has no such poll in NMEA (its software-version query, MID 132, is SiRF binary, and
/// switching a receiver to binary is not harmless): a SiRF receiver is identified only by its
/// `$PSRF…` sentences or binary frames, and otherwise answers the probe as a generic receiver
/// does, with silence.
public enum ChipsetProbe {
  /// `B5 62 0A 04 00 00 0E 34`: the `UBX-MON-VER` poll (a MON-VER frame with no payload).
  public static let ubloxPoll = UbloxDriver().probe ?? []
  /// `$PMTK605*31`: PMTK_Q_RELEASE.
  public static let mediatekPoll = MediaTekDriver().probe ?? []

  /// Every registered driver's poll (``ChipsetDriver/probe``), in the registry's order, in
  /// one write, answered by an identification. A receiver asleep may lose the
  /// first attempt to its wake-up (a MediaTek in standby wakes on any byte, a u-blox in
  /// backup on an edge on RX, and neither reads what woke it); the exchange's retries are
  /// what it answers.
  public static let step = CommandStep(
    bytes: ChipsetRegistry.all.flatMap { $0.probe ?? [] },
    summary: "probe: \(polls) (firmware queries)", acknowledgement: .identification)

  /// The polls ``step`` writes, for people: `UBX-MON-VER and $PMTK605`.
  public static var polls: String {
    let summaries = ChipsetRegistry.all.filter { $0.probe != nil }.map(\.probeSummary)
    return summaries.isEmpty ? "none" : ChipsetRegistry.prose(summaries, "and")
  }
}
