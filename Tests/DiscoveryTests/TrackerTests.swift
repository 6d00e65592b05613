import Discovery
import Testing

@Suite("Receiver tracker")
struct TrackerTests {
  typealias Action = ReceiverTracker.Action

  /// Feeds events in order and returns every action.
  private func run(_ tracker: inout ReceiverTracker, _ events: [HotplugEvent]) -> [Action] {
    events.flatMap { tracker.handle($0) }
  }

  @Test("Nothing is chosen before the present devices are all known, then the best one")
  func waitsForEnumeration() {
    var tracker = ReceiverTracker(selector: .first)
    #expect(tracker.handle(.added(Sample.pl2303)) == [])
    #expect(tracker.handle(.added(Sample.ublox)) == [])
    #expect(!tracker.isWaiting)
    #expect(tracker.handle(.enumerationComplete) == [.attach(Sample.ublox, mayWrite: true)])
    #expect(tracker.attached == Sample.ublox)
  }

  @Test("With nothing present it waits, and attaches when a receiver is plugged in")
  func waitsForReceiver() {
    var tracker = ReceiverTracker(selector: .first)
    #expect(run(&tracker, [.added(Sample.uart), .added(Sample.ftdi), .enumerationComplete]) == [])
    #expect(tracker.isWaiting)
    #expect(tracker.handle(.added(Sample.mediatek)) == [.attach(Sample.mediatek, mayWrite: true)])
    #expect(!tracker.isWaiting)
  }

  @Test("A possible receiver found by `first` is attached listen-only")
  func possibleIsListenOnly() {
    var tracker = ReceiverTracker(selector: .first)
    #expect(
      run(&tracker, [.added(Sample.pl2303), .enumerationComplete]) == [
        .attach(Sample.pl2303, mayWrite: false)
      ])
  }

  @Test("Once attached it does not switch to a better device plugged in later")
  func staysAttached() {
    var tracker = ReceiverTracker(selector: .first)
    _ = run(&tracker, [.added(Sample.pl2303), .enumerationComplete])
    #expect(tracker.handle(.added(Sample.ublox)) == [])
    #expect(tracker.attached == Sample.pl2303)
    // When the bridge goes, the u-blox takes over.
    #expect(
      tracker.handle(.removed(Sample.pl2303)) == [
        .detach(Sample.pl2303), .attach(Sample.ublox, mayWrite: true),
      ])
  }

  @Test("Unplug detaches; replug under another node attaches the same receiver again")
  func followsReplug() {
    var tracker = ReceiverTracker(selector: .first)
    _ = run(&tracker, [.added(Sample.ublox), .enumerationComplete])
    #expect(tracker.handle(.removed(Sample.ublox)) == [.detach(Sample.ublox)])
    #expect(tracker.isWaiting)
    var replugged = Sample.ublox
    replugged.path = "/dev/ttyACM3"
    replugged.sysPath = "/sys/devices/mock/other/ttyACM3"
    #expect(tracker.handle(.added(replugged)) == [.attach(replugged, mayWrite: true)])
  }

  @Test("A by-id selector follows the receiver to a new node after replug")
  func namedFollowsReplug() {
    var tracker = ReceiverTracker(selector: .path(Sample.ublox.stablePath!))
    _ = run(&tracker, [.added(Sample.ublox), .added(Sample.mediatek), .enumerationComplete])
    #expect(tracker.attached == Sample.ublox)
    // Unplugged: the MediaTek is present but is not the receiver asked for.
    #expect(tracker.handle(.removed(Sample.ublox)) == [.detach(Sample.ublox)])
    #expect(tracker.isWaiting)
    var replugged = Sample.ublox
    replugged.path = "/dev/ttyACM4"
    replugged.sysPath = "/sys/devices/mock/other/ttyACM4"
    #expect(tracker.handle(.added(replugged)) == [.attach(replugged, mayWrite: true)])
  }

  @Test("A named receiver is the only one taken, and may be written to though a bridge")
  func namedDevice() {
    var tracker = ReceiverTracker(
      selector: .path(
        "/dev/serial/by-id/usb-Prolific_Technology_Inc._USB-Serial_Controller-if00-port0"))
    #expect(
      run(&tracker, [.added(Sample.ublox), .added(Sample.pl2303), .enumerationComplete]) == [
        .attach(Sample.pl2303, mayWrite: true)
      ])
    #expect(tracker.handle(.removed(Sample.pl2303)) == [.detach(Sample.pl2303)])
    #expect(tracker.isWaiting)  // the u-blox is present but not the one asked for
  }

  @Test("A serial-number selector waits until that device is plugged in")
  func serialNumberSelector() {
    var tracker = ReceiverTracker(selector: .serialNumber("0000MT3329_A7"))
    #expect(run(&tracker, [.added(Sample.ublox), .enumerationComplete]) == [])
    #expect(tracker.handle(.added(Sample.mediatek)) == [.attach(Sample.mediatek, mayWrite: true)])
  }

  @Test("A rejected device is left for the next candidate and not retried until replugged")
  func rejection() {
    var bridge2 = Sample.pl2303
    bridge2.path = "/dev/ttyUSB5"
    bridge2.sysPath = "/sys/devices/mock/ttyUSB5"
    var tracker = ReceiverTracker(selector: .first)
    _ = run(&tracker, [.added(Sample.pl2303), .added(bridge2), .enumerationComplete])
    #expect(tracker.attached == Sample.pl2303)
    #expect(
      tracker.reject(Sample.pl2303) == [.detach(Sample.pl2303), .attach(bridge2, mayWrite: false)])
    #expect(tracker.reject(bridge2) == [.detach(bridge2)])
    #expect(tracker.isWaiting)
    // A change of a rejected device does not bring it back...
    #expect(tracker.handle(.changed(Sample.pl2303)) == [])
    // ...replugging it does.
    #expect(tracker.handle(.removed(Sample.pl2303)) == [])
    #expect(tracker.handle(.added(Sample.pl2303)) == [.attach(Sample.pl2303, mayWrite: false)])
  }

  @Test("A change to the attached device updates it, or detaches when it stops matching")
  func changes() {
    var tracker = ReceiverTracker(selector: .first)
    _ = run(&tracker, [.added(Sample.pl2303), .enumerationComplete])
    // `udevadm trigger` after the user's rule: the bridge is now a declared u-blox.
    var declared = Sample.pl2303
    declared.classification = Classification(kind: .known, chipset: .ublox, source: .udevProperty)
    #expect(tracker.handle(.changed(declared)) == [.update(declared, mayWrite: true)])
    #expect(tracker.handle(.changed(declared)) == [])
    // A SERIALGPS_IGNORE rule takes it away from `first`.
    var ignored = Sample.pl2303
    ignored.classification = Classification(kind: .other, source: .udevProperty)
    #expect(tracker.handle(.changed(ignored)) == [.detach(declared)])
    #expect(tracker.isWaiting)
  }

  @Test("Removing a device that is not attached changes nothing")
  func unrelatedRemoval() {
    var tracker = ReceiverTracker(selector: .first)
    _ = run(&tracker, [.added(Sample.ublox), .added(Sample.ftdi), .enumerationComplete])
    #expect(tracker.handle(.removed(Sample.ftdi)) == [])
    #expect(tracker.attached == Sample.ublox)
  }
}
