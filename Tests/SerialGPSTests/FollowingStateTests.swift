import Chipsets
import Discovery
import Testing

@testable import SerialGPS

/// `FollowingState`, the pure state machine behind `DiscoveringConnector`: exact action lists
/// for hotplug events and the steps of an open, with stand-ins for the connection and port.
@Suite struct FollowingStateTests {
  final class Stand: CustomStringConvertible {
    let name: String
    init(_ name: String) { self.name = name }
    var description: String { name }
  }
  typealias Machine = FollowingState<Stand, Stand>

  static func device(
    _ name: String, kind: ReceiverKind = .known, chipset: ChipsetFamily? = .ublox,
    driver: String = "cdc_acm"
  ) -> SerialDevice {
    SerialDevice(
      path: "/dev/" + name, sysPath: "/sys/devices/usb1/1-1/1-1:1.0/" + name + "/tty/" + name,
      stablePath: nil, usb: USBDeviceInfo(id: USBID(vendor: 0x1546, product: 0x01a7)),
      driver: driver,
      classification: Classification(kind: kind, chipset: chipset, source: .catalogue))
  }

  let receiver = Self.device("ttyACM0")
  let other = Self.device("ttyACM1")
  let bridge = Self.device("ttyUSB0", kind: .possible, chipset: nil, driver: "pl2303")

  /// Opens the attached device and returns its attachment number.
  static func open(_ machine: inout Machine, _ connection: Stand) throws -> Int {
    machine.openRequested()
    guard case .open(let device, _, let attachment) = machine.beginOpen() else {
      Issue.record("nothing to open")
      return 0
    }
    do {
      let result = machine.opened(connection, on: device, attachment: attachment)
      #expect(result)
    }
    return attachment
  }

  @Test func aReceiverListedWhileNobodyOpensIsAnnouncedOnceTheListingIsComplete() {
    var machine = Machine(selector: .first)
    do {
      let result = machine.handle(.added(receiver))
      #expect(result == [])
    }
    #expect(machine.attached == nil)
    do {
      let result = machine.handle(.enumerationComplete)
      #expect(result == [.releaseWaiters, .announce])
    }
    #expect(machine.attached?.device == receiver)
    #expect(machine.eventsHandled == 2)
  }

  @Test func anOpenTakesWhatIsAttachedWithoutAnnouncingIt() {
    var machine = Machine(selector: .first)
    machine.openRequested()
    #expect(machine.isOpening)
    do {
      let result = machine.handle(.added(receiver))
      #expect(result == [])
    }
    do {
      let result = machine.handle(.enumerationComplete)
      #expect(result == [.releaseWaiters])
    }
    guard case .open(let device, let mayWrite, let attachment) = machine.beginOpen() else {
      Issue.record("nothing to open")
      return
    }
    #expect(device == receiver && mayWrite && attachment == 1)
    let connection = Stand("connection")
    do {
      let result = machine.opened(connection, on: device, attachment: attachment)
      #expect(result)
    }
    #expect(!machine.isOpening)
  }

  @Test func anUnplugEndsTheConnectionAndAReplugIsAnnouncedAgainOnClose() throws {
    var machine = Machine(selector: .first)
    _ = machine.handle(.added(receiver))
    _ = machine.handle(.enumerationComplete)
    let connection = Stand("connection")
    let attachment = try Self.open(&machine, connection)
    #expect(
      machine.handle(.removed(receiver)) == [
        .end(connection, why: "was unplugged; waiting for a receiver to be plugged in")
      ])
    // Announced while the old connection is still open (the receiver ignores it then) …
    do {
      let result = machine.handle(.added(other))
      #expect(result == [.announce])
    }
    // … and again when it closes, since the device attached now is another one.
    do {
      let result = machine.closed(connection, attachment: attachment)
      #expect(result == [.announce])
    }
    #expect(machine.attached?.device == other)
  }

  struct Owned: Error, CustomStringConvertible {
    var description: String { "in use by process 42" }
  }

  /// A device another process owns is waited for: one watch of its owner, retries fail at
  /// once with the same refusal (nothing is opened), and the owner's leaving is announced.
  @Test func aDeviceAnotherProcessOwnsIsWaitedForNotOpened() {
    var machine = Machine(selector: .first)
    _ = machine.handle(.added(receiver))
    _ = machine.handle(.enumerationComplete)
    machine.openRequested()
    guard case .open(_, _, let attachment) = machine.beginOpen() else {
      Issue.record("nothing to open")
      return
    }
    do {
      let result = machine.ownedElsewhere(Owned(), attachment: attachment)
      #expect(result == [.awaitOwner(path: "/dev/ttyACM0", attachment: attachment)])
    }
    #expect(machine.awaitsOwner(attachment: attachment))
    for _ in 0..<2 {
      machine.openRequested()
      guard case .fail(let error) = machine.beginOpen() else {
        Issue.record("opened a device another process owns")
        return
      }
      #expect(error is Owned)
    }
    do {
      let result = machine.ownerLeft(attachment: attachment)
      #expect(result == [.announce])
    }
    do {
      let result = machine.ownerLeft(attachment: attachment)
      #expect(result == [], "told once")
    }
    machine.openRequested()
    guard case .open(let device, _, let again) = machine.beginOpen() else {
      Issue.record("the freed device is not opened")
      return
    }
    #expect(device == receiver && again == attachment)
    // Refused again, then unplugged: the wait ends with the attachment.
    do {
      let result = machine.ownedElsewhere(Owned(), attachment: attachment)
      #expect(result == [.awaitOwner(path: "/dev/ttyACM0", attachment: attachment)])
    }
    _ = machine.handle(.removed(receiver))
    #expect(!machine.awaitsOwner(attachment: attachment))
    do {
      let result = machine.ownerLeft(attachment: attachment)
      #expect(result == [])
    }
    #expect(machine.unexpectedEvents == 0)
  }

  @Test func aRuleThatExcludesTheDeviceEndsTheConnectionSayingSo() throws {
    var machine = Machine(selector: .first)
    _ = machine.handle(.added(receiver))
    _ = machine.handle(.enumerationComplete)
    let connection = Stand("connection")
    _ = try Self.open(&machine, connection)
    var ignored = receiver
    ignored.classification = Classification(kind: .other, source: .udevProperty)
    #expect(
      machine.handle(.changed(ignored)) == [
        .end(connection, why: "no longer matches the first receiver found (a udev rule changed it)")
      ])
  }

  @Test func anUnplugWhileListeningInterruptsThePortAndTheNextDeviceIsAnnouncedAfterTheFailure() {
    var machine = Machine(selector: .first)
    _ = machine.handle(.added(bridge))
    do {
      let result = machine.handle(.enumerationComplete)
      #expect(result == [.releaseWaiters, .announce])
    }
    machine.openRequested()
    guard case .open(let device, let mayWrite, let attachment) = machine.beginOpen() else {
      Issue.record("nothing to open")
      return
    }
    #expect(device == bridge && !mayWrite)
    let port = Stand("port")
    do {
      let result = machine.listening(to: bridge.sysPath, on: port)
      #expect(result)
    }
    // A receiver arrives: the tracker stays with the bridge being listened to.
    do {
      let result = machine.handle(.added(receiver))
      #expect(result == [])
    }
    #expect(machine.attached?.device == bridge)
    // The bridge is unplugged: its listening is interrupted; the receiver attached meanwhile
    // is the open's news to pass on once it has failed.
    do {
      let result = machine.handle(.removed(bridge))
      #expect(result == [.interrupt(port)])
    }
    machine.listeningEnded(at: bridge.sysPath, heardNMEA: false)
    let gone = DiscoveringConnector.DeviceGone(device: bridge.path, why: "was unplugged")
    do {
      let result = machine.openFailed(gone, attachment: attachment)
      #expect(result == [.announce])
    }
    #expect(machine.attached?.device == receiver)
  }

  @Test func aRejectedBridgeGivesWayToTheNextCandidateAnnouncedAfterTheFailedOpen() {
    var machine = Machine(selector: .first)
    _ = machine.handle(.added(bridge))
    _ = machine.handle(.enumerationComplete)
    machine.openRequested()
    guard case .open(_, _, let attachment) = machine.beginOpen() else {
      Issue.record("nothing to open")
      return
    }
    do {
      let result = machine.listening(to: bridge.sysPath, on: Stand("port"))
      #expect(result)
    }
    do {
      let result = machine.handle(.added(receiver))
      #expect(result == [])
    }
    machine.listeningEnded(at: bridge.sysPath, heardNMEA: false)
    machine.reject(bridge)
    #expect(machine.attached?.device == receiver)
    let silent = DiscoveringConnector.NotAReceiver(
      device: bridge, rates: [.b9600], timePerRate: .seconds(1))
    do {
      let result = machine.openFailed(silent, attachment: attachment)
      #expect(result == [.announce])
    }
    // A failure with nothing attached meanwhile announces nothing.
    machine.openRequested()
    guard case .open(_, _, let next) = machine.beginOpen() else {
      Issue.record("nothing to open")
      return
    }
    do {
      let result = machine.openFailed(silent, attachment: next)
      #expect(result == [])
    }
  }

  @Test func aBridgeHeardSpeakingNMEAMayBeWrittenTo() {
    var machine = Machine(selector: .first)
    _ = machine.handle(.added(bridge))
    _ = machine.handle(.enumerationComplete)
    #expect(!machine.mayWrite)
    machine.openRequested()
    _ = machine.beginOpen()
    do {
      let result = machine.listening(to: bridge.sysPath, on: Stand("port"))
      #expect(result)
    }
    machine.listeningEnded(at: bridge.sysPath, heardNMEA: true)
    #expect(machine.mayWrite)
    // Until it is unplugged.
    _ = machine.handle(.removed(bridge))
    _ = machine.handle(.added(bridge))
    #expect(!machine.mayWrite)
  }

  @Test func withNothingAttachedSinceALossARetryFailsTheSameWay() throws {
    var machine = Machine(selector: .first)
    _ = machine.handle(.added(receiver))
    _ = machine.handle(.enumerationComplete)
    let connection = Stand("connection")
    let attachment = try Self.open(&machine, connection)
    let hangUp = DiscoveringConnector.DeviceGone(device: receiver.path, why: "hung up")
    machine.lost(connection, attachment: attachment, hangUp)
    _ = machine.handle(.removed(receiver))
    do {
      let result = machine.closed(connection, attachment: attachment)
      #expect(result == [])
    }
    machine.openRequested()
    guard case .fail(let error) = machine.beginOpen() else {
      Issue.record("opened with nothing attached")
      return
    }
    #expect((error as? DiscoveringConnector.DeviceGone)?.why == "hung up")
    // Once something was attached since, the news is new.
    _ = machine.handle(.added(receiver))
    _ = machine.handle(.removed(receiver))
    machine.openRequested()
    guard case .fail(let later) = machine.beginOpen() else {
      Issue.record("opened with nothing attached")
      return
    }
    #expect(later is DiscoveringConnector.NoReceiver)
  }

  @Test func whenDiscoveryEndsWaitersGoOnAndOpensFailWithTheReason() {
    var machine = Machine(selector: .first)
    machine.openRequested()
    do {
      let result = machine.discoveryEnded(.stopped)
      #expect(result == [.releaseWaiters, .announce])
    }
    #expect(machine.isListed)
    guard case .fail(let error) = machine.beginOpen() else {
      Issue.record("opened after discovery ended")
      return
    }
    #expect(error as? DiscoveryError == .stopped)
    #expect(!machine.isOpening)
  }

  @Test func aDeviceUnpluggedBeforeItsOpenCompletedIsNotKept() {
    var machine = Machine(selector: .first)
    _ = machine.handle(.added(receiver))
    _ = machine.handle(.enumerationComplete)
    machine.openRequested()
    guard case .open(let device, _, let attachment) = machine.beginOpen() else {
      Issue.record("nothing to open")
      return
    }
    do {
      let result = machine.handle(.removed(receiver))
      #expect(result == [])
    }
    do {
      let result = machine.opened(Stand("connection"), on: device, attachment: attachment)
      #expect(!result)
    }
    do {
      let result = machine.listening(to: receiver.sysPath, on: Stand("port"))
      #expect(result == false)
    }
  }

  /// Steps no phase expects are ignored and counted: a debug build asserts (off here, so that
  /// the counting a release build does is what runs).
  @Test func unexpectedStepsAreCountedAndChangeNothing() {
    var machine = Machine(selector: .first)
    machine.assertsOnUnexpectedEvents = false
    _ = machine.handle(.added(receiver))
    _ = machine.handle(.enumerationComplete)
    // An open begun without being asked for, a port listened to outside an open, a
    // connection that no open made, a failure of an open not under way.
    let begun = machine.beginOpen()
    guard case .fail = begun else {
      Issue.record("began an open that was not asked for: \(begun)")
      return
    }
    let listening = machine.listening(to: receiver.sysPath, on: Stand("port"))
    #expect(!listening)
    let opened = machine.opened(Stand("connection"), on: receiver, attachment: 1)
    #expect(!opened)
    let failed = machine.openFailed(DiscoveryError.stopped, attachment: 1)
    #expect(failed == [])
    #expect(!machine.isOpening)
    #expect(machine.unexpectedEvents == 4)
    // Expected races are not counted: a device removed that is not in use, a loss reported
    // by a connection already replaced.
    _ = machine.handle(.removed(other))
    machine.lost(Stand("old connection"), attachment: 0, DiscoveryError.stopped)
    #expect(machine.unexpectedEvents == 4)
  }
}
