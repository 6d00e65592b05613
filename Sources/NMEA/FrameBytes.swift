/// A frame as bytes again, and what a framer holds of one unfinished: for a writer that passes
/// on only whole sentences and frames (the gpsd server's raw port), so that nothing it writes
/// can take the bytes written after it for its own.
extension Frame {
  /// The frame as it goes on the wire: a sentence as it arrived (its checksum included) with
  /// CR LF, a UBX, SiRF, RTCM 3 or CASIC frame with its sync bytes, length, checksum (and SiRF's
  /// trailer).
  /// A framer fed these bytes finds this frame again, whole, and nothing else.
  public var bytes: [UInt8] {
    switch self {
    case .sentence(let sentence):
      return Array(sentence.line) + [ASCII.cr, ASCII.lf]
    case .ubx(let view):
      let length = view.payload.count
      var out: [UInt8] = [0xB5, 0x62, view.messageClass, view.messageID]
      out.reserveCapacity(length + 8)
      out.append(UInt8(truncatingIfNeeded: length))
      out.append(UInt8(truncatingIfNeeded: length >> 8))
      out.append(contentsOf: view.payload)
      var a: UInt8 = 0
      var b: UInt8 = 0
      for byte in out[2...] {
        a = a &+ byte
        b = b &+ a
      }
      out.append(a)
      out.append(b)
      return out
    case .sirf(let view):
      let length = view.payload.count
      let sum = view.payload.reduce(0) { $0 + Int($1) } & 0x7FFF
      var out: [UInt8] = [
        0xA0, 0xA2, UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length),
      ]
      out.reserveCapacity(length + 8)
      out.append(contentsOf: view.payload)
      out += [UInt8(sum >> 8), UInt8(sum & 0xFF), 0xB0, 0xB3]
      return out
    case .rtcm3(let view):
      return RTCM3.frame(message: view.message)
    case .casic(let view):
      return CASICFraming.frame(
        messageClass: view.messageClass, messageID: view.messageID, payload: Array(view.payload))
    }
  }
}

extension NMEAFramer {
  /// Bytes of a sentence or frame begun and not yet finished: what ``reset()`` would drop.
  /// At most the longest sentence (and its CR) or binary frame the configuration allows.
  public var bytesInProgress: Int {
    switch state {
    case .hunting, .discarding: return 0
    case .sentence: return length
    case .ubxSync, .sirfSync, .rtcm3Sync, .casicSync: return 1
    case .ubx, .sirf, .rtcm3, .casic: return binary.count
    }
  }
}
