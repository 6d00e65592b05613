import Testing

@testable import serialgps

/// Runs `input` through a fresh filter in chunks of `chunk` bytes; returns the data and the
/// number of comment lines dropped.
func filtered(_ input: [UInt8], chunk: Int = .max) -> (data: [UInt8], comments: Int) {
  var filter = CommentFilter()
  var data: [UInt8] = []
  var offset = 0
  input.withUnsafeBytes { raw in
    while offset < raw.count {
      let end = min(raw.count, offset + max(1, min(chunk, raw.count - offset)))
      filter.filter(UnsafeRawBufferPointer(rebasing: raw[offset..<end])) {
        data.append(contentsOf: $0)
      }
      offset = end
    }
  }
  filter.finish()
  return (data, filter.commentLines)
}

/// A UBX frame with a valid Fletcher checksum around `payload`.
func ubxFrame(class messageClass: UInt8, id: UInt8, payload: [UInt8]) -> [UInt8] {
  var body: [UInt8] = [messageClass, id, UInt8(payload.count & 0xFF), UInt8(payload.count >> 8)]
  body += payload
  var a: UInt8 = 0
  var b: UInt8 = 0
  for byte in body {
    a = a &+ byte
    b = b &+ a
  }
  return [0xB5, 0x62] + body + [a, b]
}

@Suite("comment lines in recordings")
struct CommentFilterTests {
  @Test("header and interleaved comment lines are dropped, sentences kept")
  func dropsComments() {
    let input = Array(
      """
      # Name: u-blox NEO-M8N
      # Submitter: Jürgen <j@example.org>\r
      $GPGGA,1*00\r
      # a note in the middle
      $GPRMC,2*00\r

      """.utf8)
    let (data, comments) = filtered(input)
    #expect(String(decoding: data, as: UTF8.self) == "$GPGGA,1*00\r\n$GPRMC,2*00\r\n")
    #expect(comments == 3)
  }

  @Test("a # inside a line, or a line of spaces before it, is data")
  func hashInsideLines() {
    let input = Array("$GPTXT,01,01,02,#1 antenna*00\r\n  # indented\n".utf8)
    #expect(filtered(input).data == input)
  }

  @Test("a comment at the very end without a line feed is still a comment")
  func unterminatedComment() {
    let input = Array("$GPGGA,1*00\n# trailing".utf8)
    let (data, comments) = filtered(input)
    #expect(data == Array("$GPGGA,1*00\n".utf8))
    #expect(comments == 1)
  }

  @Test("a binary frame holding LF and # bytes reaches the framer whole")
  func binaryFramesIntact() {
    // A payload with a LF followed by '#', text after it, and NUL bytes: nothing of it may go.
    let payload: [UInt8] = [0x00, 0x0A, 0x23, 0x20, 0x41, 0x42, 0x0A, 0x23, 0x43, 0x00, 0x0A, 0x23]
    let frame = ubxFrame(class: 0x0A, id: 0x04, payload: payload)
    let input = Array("$GPGGA,1*00\r\n".utf8) + frame + Array("\r\n$GPRMC,2*00\r\n".utf8)
    let (data, comments) = filtered(input)
    #expect(data == input)
    #expect(comments == 0)
  }

  @Test("a # line that turns out to hold control bytes is passed on unchanged")
  func notACommentAfterAll() {
    let input = Array("$GPGGA,1*00\n#\u{01}binary\n$GPRMC,2*00\n".utf8)
    let (data, comments) = filtered(input)
    #expect(data == input)
    #expect(comments == 0)
  }

  @Test("the same output however the recording is split into chunks")
  func splitIndependent() {
    let frame = ubxFrame(class: 0x01, id: 0x07, payload: [0x0A, 0x23, 0x00, 0x0A, 0x41, 0x0A])
    let input =
      Array("# header\n# second\n$GPGGA,1*00\r\n".utf8) + frame
      + Array("\n# after binary\n$GPRMC,2*00\n#x\n\n#last".utf8)
    let whole = filtered(input)
    for chunk in 1...input.count {
      let split = filtered(input, chunk: chunk)
      #expect(split.data == whole.data, "chunk size \(chunk)")
      #expect(split.comments == whole.comments, "chunk size \(chunk)")
    }
  }

  @Test("a very long # line is taken for data rather than held back without bound")
  func boundedComment() {
    let long = "#" + String(repeating: "x", count: CommentFilter.maximumCommentLength + 10) + "\n"
    let input = Array(long.utf8)
    let (data, comments) = filtered(input)
    #expect(data == input)
    #expect(comments == 0)
  }
}
