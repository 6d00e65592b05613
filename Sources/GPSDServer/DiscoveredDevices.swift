import Discovery

/// Which of the devices discovery reports the server serves, as a state machine with no I/O:
/// a receiver candidate (a known or possible receiver, not merely another serial port) is
/// served once, by its sysfs path, from its appearing until it is unplugged or is no longer
/// classified as a receiver; a change of one served reaches its receiver and renames it. The
/// event loop makes and releases the receivers (through ``ServerState``) as its actions say.
struct DiscoveredDevices {
  enum Action: Equatable {
    /// Serve this device as device `id`: make its receiver, which follows the device.
    case serve(DeviceID, SerialDevice)
    /// The served device changed: its receiver is told, and what the loop knows of it is this.
    case changed(DeviceID, HotplugEvent, SerialDevice)
    /// The device answers to new names.
    case rename(DeviceID, DeviceDescription)
    /// Stop serving the device: its watchers are told, its receiver put to standby.
    case stop(DeviceID)
    /// Say this to the operator (without the program's name).
    case log(String)
  }

  /// The device served for each sysfs path.
  private var served: [String: DeviceID] = [:]

  /// Devices served now.
  var count: Int { served.count }

  /// What discovery reported; `newID` is the number a device served now gets.
  mutating func handle(_ event: HotplugEvent, newID: DeviceID) -> [Action] {
    switch event {
    case .added(let device):
      return serve(device, as: newID)
    case .removed(let device):
      // Not passed to its receiver: the server shuts it down, and the shutdown sends the
      // standby commands first in case the device is still there, which a connector that
      // ended the connection on hearing of the unplug would skip.
      return stop(device.sysPath, reason: "unplugged")
    case .changed(let device):
      guard let id = served[device.sysPath] else { return serve(device, as: newID) }
      // Its receiver learns what changed (a udev rule declaring its chipset, say) as a
      // receiver following discovery does.
      let told = Action.changed(id, event, device)
      guard device.isReceiverCandidate else {
        return [told] + stop(device.sysPath, reason: "no longer classified as a receiver")
      }
      return [told, .rename(id, Self.description(of: device))]
    case .enumerationComplete:
      let count = served.count
      return [
        .log(
          count == 0
            ? "no receiver attached; waiting for one to be plugged in"
            : "serving \(count) receiver\(count == 1 ? "" : "s")")
      ]
    }
  }

  private mutating func serve(_ device: SerialDevice, as id: DeviceID) -> [Action] {
    guard device.isReceiverCandidate, served[device.sysPath] == nil else { return [] }
    served[device.sysPath] = id
    return [
      .log("\(device.path) appeared (\(device.classification.kind) receiver)"),
      .serve(id, device),
    ]
  }

  private mutating func stop(_ sysPath: String, reason: String) -> [Action] {
    guard let id = served.removeValue(forKey: sysPath) else { return [] }
    return [.log("stopped serving \(sysPath): \(reason)"), .stop(id)]
  }

  /// The device's path, and the other names a client may use for it (its udev links and its
  /// stable path).
  static func description(of device: SerialDevice) -> DeviceDescription {
    var aliases = device.links
    if let stable = device.stablePath, !aliases.contains(stable) { aliases.append(stable) }
    return DeviceDescription(path: device.path, aliases: aliases.filter { $0 != device.path })
  }
}
