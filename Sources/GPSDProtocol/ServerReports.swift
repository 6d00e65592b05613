import NMEA

// The reports a gpsd server sends besides TPV and SKY: WATCH, DEVICE, DEVICES, POLL. Field
// order and formats follow gpsd 3.22 (`json_watch_dump`, `json_device_dump`, the POLL
// reply), which its clients have been parsing for years.

/// What a DEVICE report says about a device.
public struct GPSDDevice: Sendable, Hashable {
  /// The device's path, as clients name it in `?WATCH={"device":…}`.
  public var path: String
  /// gpsd's name for the driver (`NMEA0183`, `u-blox` …), once the device has sent data.
  public var driver: String?
  /// More about the receiver (firmware version), when known.
  public var subtype: String?
  /// When the device last became active (opened and sending); absent while it is off.
  public var activated: UTCTimestamp?
  /// gpsd's `SEEN_*` bits: 1 once GPS data was seen.
  public var flags: Int?
  /// Serial settings, when known.
  public var bitsPerSecond: Int?
  /// Seconds between epochs, when known.
  public var cycle: Double?

  public init(
    path: String, driver: String? = nil, subtype: String? = nil, activated: UTCTimestamp? = nil,
    flags: Int? = nil, bitsPerSecond: Int? = nil, cycle: Double? = nil
  ) {
    self.path = path
    self.driver = driver
    self.subtype = subtype
    self.activated = activated
    self.flags = flags
    self.bitsPerSecond = bitsPerSecond
    self.cycle = cycle
  }

  /// `SEEN_GPS`: GPS data has been seen on the device.
  public static let seenGPS = 0x01
}

extension JSONWriter {
  /// A `WATCH` report of a client's policy, as gpsd 3.22 writes it (every flag, then the
  /// device filter if any).
  public mutating func watch(_ policy: WatchPolicy) {
    report("WATCH") { json in
      json.member("enable", policy.enable)
      json.member("json", policy.json)
      json.member("nmea", policy.nmea)
      json.member("raw", policy.raw)
      json.member("scaled", policy.scaled)
      json.member("timing", policy.timing)
      json.member("split24", policy.split24)
      json.member("pps", policy.pps)
      json.member("device", policy.device)
    }
  }

  /// A `DEVICE` report. Serial settings and the activation time appear only while the device
  /// is active, as in gpsd.
  public mutating func device(_ device: GPSDDevice) {
    report("DEVICE") { json in
      json.member("path", device.path)
      json.member("driver", device.driver)
      json.member("subtype", device.subtype)
      guard let activated = device.activated else { return }
      json.member("activated", activated)
      json.member("flags", device.flags)
      json.member("native", 0)
      if let bitsPerSecond = device.bitsPerSecond {
        json.member("bps", bitsPerSecond)
        json.member("parity", "N")
        json.member("stopbits", 1)
      }
      json.member("cycle", device.cycle, decimals: 2)
    }
  }

  /// The `DEVICE` notice that a device went away or was closed:
  /// `{"class":"DEVICE","path":"…","activated":0}`, exactly as gpsd 3.22 sends it.
  public mutating func deviceDeactivated(path: String) {
    report("DEVICE") { json in
      json.member("path", path)
      json.member("activated", 0)
    }
  }

  /// A `DEVICES` report listing `devices`.
  public mutating func devices(_ devices: [GPSDDevice]) {
    report("DEVICES") { json in
      json.key("devices")
      json.beginArray()
      for device in devices { json.device(device) }
      json.endArray()
    }
  }

  /// A `POLL` reply: `time` now, then the cached TPV and SKY reports given as already-encoded
  /// objects (one per device), and an empty `gst` list (no GST reports are made).
  public mutating func poll(time: UTCTimestamp, active: Int, tpv: [[UInt8]], sky: [[UInt8]]) {
    report("POLL") { json in
      json.member("time", time)
      json.member("active", active)
      json.key("tpv")
      json.beginArray()
      for object in tpv { json.encoded(object) }
      json.endArray()
      json.key("gst")
      json.beginArray()
      json.endArray()
      json.key("sky")
      json.beginArray()
      for object in sky { json.encoded(object) }
      json.endArray()
    }
  }

  /// Writes `json`, the text of one complete JSON value encoded earlier (a cached report),
  /// as the next value. The caller vouches that it is valid JSON.
  public mutating func encoded(_ json: [UInt8]) {
    value { $0.append(contentsOf: json) }
  }
}
