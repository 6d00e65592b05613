import Testing

@testable import POSIX

/// A process id as lock files and awake markers hold it (`Processes.decimal`,
/// `Processes.id(inText:)`): written without the standard library's integer text, read
/// without its integer parsing.
@Suite struct ProcessIDTextTests {
  @Test("decimal digits: zero, one digit, many, the largest id; negative ids as 0")
  func writes() {
    #expect(String(decoding: Processes.decimal(0), as: UTF8.self) == "0")
    #expect(String(decoding: Processes.decimal(7), as: UTF8.self) == "7")
    #expect(String(decoding: Processes.decimal(40_321), as: UTF8.self) == "40321")
    #expect(String(decoding: Processes.decimal(.max), as: UTF8.self) == "2147483647")
    #expect(String(decoding: Processes.decimal(-5), as: UTF8.self) == "0")
  }

  @Test("the first word in digits: HDB's padded form, a marker's line, and what is refused")
  func reads() {
    #expect(Processes.id(inText: Array("      1234\n".utf8)) == 1234)
    #expect(Processes.id(inText: Array("1234\n".utf8)) == 1234)
    #expect(Processes.id(inText: Array("\t42 serialgps\n".utf8)) == 42)
    #expect(Processes.id(inText: Array("2147483647".utf8)) == .max)
    #expect(Processes.id(inText: Array("2147483648".utf8)) == nil, "past pid_t")
    #expect(Processes.id(inText: Array("12a".utf8)) == nil)
    #expect(Processes.id(inText: Array("-5".utf8)) == nil, "no sign: kill(-5, 0) names a group")
    #expect(Processes.id(inText: Array("+5".utf8)) == nil)
    #expect(Processes.id(inText: Array(" \n".utf8)) == nil)
    #expect(Processes.id(inText: [UInt8]()) == nil)
    // Only the first 32 bytes are read: a word that starts past them is none.
    #expect(Processes.id(inText: Array((String(repeating: " ", count: 32) + "77").utf8)) == nil)
    for value in [1, 9, 10, 99, 100, 65_535, 4_194_304] as [Int32] {
      #expect(Processes.id(inText: Processes.decimal(value)) == value)
    }
  }
}
