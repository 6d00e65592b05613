import Discovery
import POSIX
import SerialGPS

/// The receivers of the event loop: their subscriptions as ``StreamDoors`` decides them,
/// their release, and the devices discovery finds and loses. On the server's thread, as the
/// loop.
extension EventLoop {
  /// Gives the device the subscription ``StreamDoors`` decided. A replacement is made before
  /// the old one is cancelled, so the receiver never sees zero subscribers in between (no
  /// power cycle); events of the old one still queued are dropped by their generation.
  func resubscribe(_ id: DeviceID, _ need: ReceiverNeed?) {
    guard var slot = receivers[id], slot.need != need else { return }
    let old = slot.subscription
    slot.generation += 1
    slot.need = need
    slot.subscription = nil
    if let need {
      let generation = slot.generation
      let inbox = self.inbox
      // Straight from the reader's thread into the inbox, which wakes this loop: no task and
      // no queue in between (the inbox is the one bound, newest wins).
      slot.subscription = slot.receiver.subscribeOnReaderThread(
        rawData: need.rawData, sentences: need.sentences
      ) { item in
        inbox.post(.receiver(id, generation: generation, item))
      }
    }
    receivers[id] = slot
    old?.cancel()
    counters.withLock { $0.subscribedDevices = receivers.values.filter { $0.need != nil }.count }
  }

  /// The device is gone: its receiver is shut down.
  func release(_ id: DeviceID) {
    guard let slot = receivers.removeValue(forKey: id) else { return }
    perform(doors.deviceReleased(id))
    slot.subscription?.cancel()
    configuration.receiverChanges?(
      .removed(ServedReceiver(path: slot.path, device: slot.device, receiver: slot.receiver)))
    let receiver = slot.receiver
    let retired = self.retired
    // Kept until its standby is done, so that a server shutdown meanwhile waits for it;
    // then forgotten, so that years of plugging leave nothing behind.
    retired.withLock { $0.append(receiver) }
    DriverExecutor.task {
      await receiver.shutdown()
      retired.withLock { $0.removeAll { $0 === receiver } }
    }
  }

  /// Runs ``DiscoveredDevices``' answer to what discovery reported.
  func handleHotplug(_ event: HotplugEvent) {
    for action in discovered.handle(event, newID: nextDeviceID) {
      switch action {
      case .serve(let id, let device):
        serveDiscovered(device, as: id)
      case .changed(let id, let event, let device):
        receivers[id]?.hotplug?.send(event)
        receivers[id]?.device = device
      case .rename(let id, let description):
        perform(state.deviceRenamed(id, description))
      case .stop(let id):
        perform(state.deviceRemoved(id))
      case .log(let message):
        log(message)
      }
    }
  }

  /// Serves a receiver candidate discovery found. Its receiver's connector follows the device
  /// as `DiscoveringConnector` does for a receiver the user chose (the first one found): it
  /// writes to a known receiver, and only listens to a possible one (a generic USB-serial
  /// bridge) until it has heard NMEA on it.
  private func serveDiscovered(_ device: SerialDevice, as id: DeviceID) {
    let hotplug = HotplugFeed(device)
    let connector = DiscoveringConnector(
      selector: .first, baud: configuration.baud, events: { hotplug.events() })
    let receiver = GPSReceiver(
      connector: connector, options: configuration.receiverOptions, clock: clock)
    nextDeviceID = max(nextDeviceID, id + 1)
    var slot = ReceiverSlot(receiver: receiver, path: device.path)
    slot.device = device
    slot.hotplug = hotplug
    receivers[id] = slot
    doors.deviceAdded(id)
    // Told before the watchers subscribe it: a time service must reach the reader before the
    // port opens.
    configuration.receiverChanges?(
      .added(ServedReceiver(path: device.path, device: device, receiver: receiver)))
    perform(
      state.deviceAdded(id, DiscoveredDevices.description(of: device), wallClock: wallClockNow()))
    // The first receiver served now: the stream ports' connections get its output.
    perform(doors.reconcile(id))
  }
}

/// The latest fixes as the receivers' hubs, their one owner, have them.
struct ReceiverFixes: LatestFixes {
  let receivers: [DeviceID: EventLoop.ReceiverSlot]
  func replay(of device: DeviceID) -> FixUpdate? { receivers[device]?.receiver.replay }
  func latest(of device: DeviceID) -> FixUpdate? { receivers[device]?.receiver.latestFix }
}
