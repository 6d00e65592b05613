import Foundation
import Testing

@testable import GPSDProtocol

/// Parses one JSON value with Foundation, failing the test if it is not valid JSON.
func parseJSON(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> Any? {
  do {
    return try JSONSerialization.jsonObject(
      with: Data(text.utf8), options: [.fragmentsAllowed])
  } catch {
    Issue.record("not valid JSON (\(error)): \(text)", sourceLocation: sourceLocation)
    return nil
  }
}

@Suite("JSON writer")
struct JSONWriterTests {
  func written(_ body: (inout JSONWriter) -> Void) -> String {
    var writer = JSONWriter()
    body(&writer)
    return writer.text
  }

  @Test("commas and colons at every level, none after a newline")
  func structure() {
    let text = written { json in
      json.beginObject()
      json.member("a", 1)
      json.key("list")
      json.beginArray()
      json.integer(1)
      json.beginObject()
      json.member("b", true)
      json.endObject()
      json.beginArray()
      json.endArray()
      json.string("x")
      json.endArray()
      json.member("c", "d")
      json.endObject()
      json.newline()
      json.beginObject()
      json.endObject()
      json.newline(crlf: true)
    }
    #expect(text == "{\"a\":1,\"list\":[1,{\"b\":true},[],\"x\"],\"c\":\"d\"}\n{}\r\n")
  }

  @Test("nil and non-finite members are left out; non-finite array elements are null")
  func omission() {
    let text = written { json in
      json.beginObject()
      json.member("none", nil as Int?)
      json.member("nan", Double.nan, decimals: 3)
      json.member("inf", -Double.infinity, decimals: 3)
      json.member("text", nil as String?)
      json.member("x", 1.5, decimals: 1)
      json.key("list")
      json.beginArray()
      json.number(Double.nan, decimals: 2)
      json.number(Double.infinity)
      json.endArray()
      json.endObject()
    }
    #expect(text == "{\"x\":1.5,\"list\":[null,null]}")
    #expect(parseJSON(text) != nil)
  }

  @Test("strings: quotes, backslashes, control characters, non-ASCII, surrogate pairs")
  func escaping() throws {
    let original = "quote \" backslash \\ tab\t nl\n cr\r bell\u{07} nul\u{00} del\u{7F} é 🛰 end"
    let text = written { $0.string(original) }
    #expect(text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }, "output is printable ASCII")
    #expect(text.contains("\\u0007") && text.contains("\\u0000") && text.contains("\\u007f"))
    #expect(text.contains("\\ud83d\\udef0"), "U+1F6F0 as a surrogate pair")
    let parsed = try #require(parseJSON(text) as? String)
    #expect(parsed == original)
  }

  @Test("device bytes: valid UTF-8 kept, other bytes read as Latin-1, output always valid")
  func deviceBytes() throws {
    // "Jürgen" in UTF-8, then a lone 0xB0 (° in Latin-1), a truncated sequence, an overlong.
    let bytes: [UInt8] = Array("J\u{FC}rgen ".utf8) + [0xB0, 0x20, 0xE2, 0x82, 0x20, 0xC0, 0x80]
    let text = written { $0.string(bytes: bytes) }
    let parsed = try #require(parseJSON(text) as? String)
    #expect(parsed == "Jürgen ° \u{E2}\u{82} \u{C0}\u{80}")
  }

  @Test("keys given at run time are escaped too")
  func dynamicKeys() throws {
    let text = written { json in
      json.beginObject()
      json.key("we\"ird\n")
      json.integer(-42)
      json.endObject()
    }
    let parsed = try #require(parseJSON(text) as? [String: Any])
    #expect(parsed["we\"ird\n"] as? Int == -42)
  }

  @Test("integers at the limits")
  func integers() {
    let text = written { json in
      json.beginArray()
      json.integer(Int.min)
      json.integer(Int.max)
      json.integer(UInt64.max)
      json.integer(0)
      json.integer(Int8(-7))
      json.endArray()
    }
    #expect(text == "[\(Int.min),\(Int.max),18446744073709551615,0,-7]")
  }

  @Test("fixed decimals round like printf, ties to even on the exact binary value")
  func fixedDecimalCases() {
    let cases: [(Double, Int, String)] = [
      (0.125, 2, "0.12"),  // exact tie: to even
      (0.375, 2, "0.38"),
      (2.5, 0, "2"),
      (3.5, 0, "4"),
      (0.0005, 3, "0.001"),  // 0.0005 is slightly above the tie in binary
      (1.0005, 3, "1.000"),  // and 1.0005 slightly below
      (1147.2, 4, "1147.2000"),
      (-21.3, 3, "-21.300"),
      (-0.0001, 3, "0.000"),  // no "-0.000"
      (-0.0, 2, "0.00"),
      (0.9999999, 3, "1.000"),
      (-121.314246333333, 9, "-121.314246333"),
      (99.995, 2, "100.00"),  // 99.99500000000000454… in binary
      (4.35, 1, "4.3"),  // 4.34999999999999964…
      (1e15 + 0.5, 1, "1000000000000000.5"),
      (123456789012.345678, 4, "123456789012.3457"),
      (Double.leastNonzeroMagnitude, 9, "0.000000000"),
    ]
    for (value, decimals, expected) in cases {
      #expect(DecimalText.fixed(value, decimals: decimals) == expected, "\(value) %.\(decimals)f")
    }
    #expect(DecimalText.fixed(.nan, decimals: 2) == nil)
  }

  @Test("fixed decimals agree with printf over many values")
  func fixedDecimalsMatchPrintf() {
    var generator = SystemRandomNumberGenerator()
    var mismatches: [String] = []
    for index in 0..<20_000 {
      let decimals = index % 10
      let exponent = Double(Int.random(in: -6...12, using: &generator))
      var value = Double.random(in: -1...1, using: &generator) * pow(10, exponent)
      if index % 7 == 0 {
        // Values on or next to a decimal tie are where a careless formatter goes wrong.
        let scale = pow(10.0, Double(decimals))
        value = (value * scale).rounded(.down) / scale + 0.5 / scale
        switch Int.random(in: 0..<3, using: &generator) {
        case 0: value = value.nextUp
        case 1: value = value.nextDown
        default: break
        }
      }
      let ours = DecimalText.fixed(value, decimals: decimals)!
      var reference = String(format: "%.\(decimals)f", value)
      if reference.hasPrefix("-") && reference.dropFirst().allSatisfy({ $0 == "0" || $0 == "." }) {
        reference.removeFirst()  // printf's "-0.00"; the writer drops the sign of a zero
      }
      if ours != reference { mismatches.append("\(value) %.\(decimals)f: \(ours) vs \(reference)") }
    }
    #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
  }

  @Test("removeAll keeps nothing of the previous text")
  func reuse() {
    var writer = JSONWriter()
    writer.beginObject()
    writer.member("a", 1)
    writer.removeAll()
    writer.beginObject()
    writer.member("b", 2)
    writer.endObject()
    #expect(writer.text == "{\"b\":2}")
  }
}
