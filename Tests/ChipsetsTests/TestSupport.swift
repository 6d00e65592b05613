import Foundation
import NMEA
import Testing

@testable import Chipsets

/// Bytes from a hex string as documents print them: `B5 62 06 04`, case and spacing free.
func hexBytes(_ text: String) -> [UInt8] {
  text.split(whereSeparator: { $0 == " " || $0 == "," }).map { UInt8($0, radix: 16)! }
}

func ascii(_ text: String) -> [UInt8] { Array(text.utf8) }

/// An independent 8-bit Fletcher checksum, written from the u-blox description ("CK_A =
/// CK_A + Buffer[I]; CK_B = CK_B + CK_A", over class through payload), in Int arithmetic
/// masked to 8 bits, so a slip in the module's UInt8 wrapping arithmetic cannot hide.
func referenceFletcher(_ bytes: [UInt8]) -> [UInt8] {
  var a = 0
  var b = 0
  for byte in bytes {
    a = (a + Int(byte)) % 256
    b = (b + a) % 256
  }
  return [UInt8(a), UInt8(b)]
}

/// An independent UBX frame builder on top of ``referenceFletcher(_:)``.
func referenceUBX(_ messageClass: UInt8, _ id: UInt8, _ payload: [UInt8]) -> [UInt8] {
  let body = [messageClass, id, UInt8(payload.count % 256), UInt8(payload.count / 256)] + payload
  return [0xB5, 0x62] + body + referenceFletcher(body)
}

/// An independent NMEA framing: XOR of the body, two upper-case hex digits, CR LF.
func referenceNMEA(_ body: String) -> [UInt8] {
  var sum: UInt8 = 0
  for byte in body.utf8 { sum ^= byte }
  let digits = String(sum, radix: 16, uppercase: true)
  return ascii("$" + body + "*" + (digits.count == 1 ? "0" : "") + digits + "\r\n")
}

/// What a framer makes of `bytes`: the decoded commands and acknowledgements, and the
/// parsed sentences and UBX frame IDs, all copied out of the framer's closure.
struct Framed {
  var commands: [ReceiverCommand] = []
  var acknowledgements: [ReceiverAcknowledgement] = []
  var ubx: [UBXMessageID] = []
  var sentences: [Sentence] = []
  var garbage = 0

  init(_ bytes: [UInt8]) {
    var framer = NMEAFramer()
    framer.feed(bytes) { frame in
      switch frame {
      case .sentence(let raw):
        if let sentence = try? Sentence(parsing: raw) {
          sentences.append(sentence)
          commands.append(ReceiverCommand(sentence))
          if let ack = ReceiverAcknowledgement(sentence) { acknowledgements.append(ack) }
        }
      case .ubx(let view):
        ubx.append(UBXMessageID(view))
        commands.append(ReceiverCommand(view))
        if let ack = ReceiverAcknowledgement(view) { acknowledgements.append(ack) }
      case .casic:
        if let ack = ReceiverAcknowledgement(frame: frame) { acknowledgements.append(ack) }
      case .sirf, .rtcm3:
        break
      }
    }
    garbage = framer.statistics.garbageBytes
  }
}

/// gpsd's captures, carried by the repository in `corpus/` (corpus/README.md): `corpus/gpsd`
/// (NMEA) and `corpus/gpsd-ubx` (u-blox binary).
enum Corpus {
  static let package = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // ChipsetsTests
    .deletingLastPathComponent()  // Tests
    .deletingLastPathComponent()  // the package

  static var directory: String { package.appendingPathComponent("corpus/gpsd").path }
  static var ubxDirectory: String { package.appendingPathComponent("corpus/gpsd-ubx").path }
  static var casicDirectory: String { package.appendingPathComponent("corpus/gpsd-casic").path }

  /// What a test says when a capture it needs is not there: which, and how to get it back.
  static func missingMessage(_ path: String) -> Comment {
    Comment(
      rawValue: "\(path) is missing: the repository carries it; restore it with "
        + "`git checkout -- corpus` or scripts/refresh-corpus.sh (corpus/README.md)")
  }

  /// `directory/name`, or a failure naming it by its place in the repository.
  static func require(_ name: String, in directory: String) throws -> URL {
    let relative =
      directory.hasPrefix(package.path + "/")
      ? String(directory.dropFirst(package.path.count + 1)) : directory
    let path = name.isEmpty ? directory : directory + "/" + name
    try #require(
      FileManager.default.fileExists(atPath: path),
      missingMessage(name.isEmpty ? relative : relative + "/" + name))
    return URL(fileURLWithPath: path)
  }

  static func logs(in directory: String = directory) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: require("", in: directory).path)
      .filter { $0.hasSuffix(".log") }.sorted()
  }

  /// A capture's bytes without its `#` comment header.
  static func bytes(_ name: String, in directory: String = directory) throws -> [UInt8] {
    let data = try Data(contentsOf: require(name, in: directory))
    var bytes = [UInt8](data)
    while bytes.first == 0x23 {  // '#': drop the header line through LF
      guard let lf = bytes.firstIndex(of: 0x0A) else { return [] }
      bytes.removeSubrange(...lf)
    }
    return bytes
  }

  /// A capture's header lines (`# Chipset: …`).
  static func header(_ name: String, in directory: String = directory) throws -> String {
    let data = try Data(contentsOf: require(name, in: directory))
    let text = String(decoding: data.prefix(4096), as: UTF8.self)
    return text.split(separator: "\n").prefix { $0.hasPrefix("#") }.joined(separator: "\n")
  }
}
