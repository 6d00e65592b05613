/// Removes `#` comment lines from a recording while passing binary frames through intact.
///
/// A recording holds the bytes a receiver sent, with `#` lines (a header naming the receiver,
/// notes) added by people. Binary UBX and SiRF frames can contain both `#` and LF bytes, so
/// the rule is narrow:
///
/// - A `#` begins a comment only at the start of a line: as the recording's first byte, or
///   right after a LF that ended a *text line*.
/// - A text line holds no control byte other than TAB and CR, and no DEL. Bytes from 0x80 up
///   are allowed, so comments may be UTF-8 (names in headers).
/// - The comment runs through the next LF (or the end of the recording) and is dropped only
///   if it is itself a text line. If a control byte turns up first, it was not a comment and
///   its bytes are passed on unchanged.
///
/// Binary frames almost always hold NUL and other control bytes (a UBX length's high byte is
/// 0 for any frame under 256 bytes), so the line around a `#` inside a frame is not text and
/// the frame reaches the framer whole. A held-back comment is bounded (4 KiB); a longer one is
/// taken for data.
struct CommentFilter {
  /// Comment lines dropped so far.
  private(set) var commentLines = 0

  /// Whether the bytes since the last LF (or the start) are all text.
  private var lineIsText = true
  /// Whether the next byte starts a line that follows a text line (or the recording's start).
  private var atLineStart = true
  /// The comment line being held back until its end shows whether it is one.
  private var pending: [UInt8] = []
  private var inComment = false

  static let maximumCommentLength = 4096

  init() {
    pending.reserveCapacity(256)
  }

  /// Whether `byte` may appear in a text line (LF ends one).
  @inline(__always)
  static func isText(_ byte: UInt8) -> Bool {
    byte >= 0x20 ? byte != 0x7F : (byte == 0x09 || byte == 0x0D)
  }

  /// Filters one chunk, calling `emit` with the runs of data in it (in order).
  mutating func filter(_ chunk: UnsafeRawBufferPointer, _ emit: (UnsafeRawBufferPointer) -> Void) {
    var runStart = 0
    var index = 0
    let count = chunk.count
    while index < count {
      let byte = chunk[index]
      if inComment {
        if byte == 0x0A {
          // A whole text line that began with '#': drop it.
          pending.removeAll(keepingCapacity: true)
          inComment = false
          commentLines += 1
          atLineStart = true
          lineIsText = true
          index += 1
          runStart = index
        } else if !Self.isText(byte) || pending.count >= Self.maximumCommentLength {
          // Not a comment after all: its bytes are data, and so is this one.
          inComment = false
          pending.withUnsafeBytes { emit($0) }
          pending.removeAll(keepingCapacity: true)
          atLineStart = false
          lineIsText = Self.isText(byte)
          runStart = index
          index += 1
        } else {
          pending.append(byte)
          index += 1
        }
        continue
      }
      if byte == 0x23 && atLineStart {  // "#"
        if index > runStart {
          emit(UnsafeRawBufferPointer(rebasing: chunk[runStart..<index]))
        }
        inComment = true
        pending.append(byte)
        index += 1
        continue
      }
      if byte == 0x0A {
        // The next line may open a comment only if this one was text.
        atLineStart = lineIsText
        lineIsText = true
      } else {
        atLineStart = false
        if !Self.isText(byte) { lineIsText = false }
      }
      index += 1
    }
    if !inComment && index > runStart {
      emit(UnsafeRawBufferPointer(rebasing: chunk[runStart..<index]))
    }
  }

  /// At the end of the recording: a comment line without a final LF is still a comment.
  mutating func finish() {
    if inComment {
      inComment = false
      commentLines += 1
      pending.removeAll(keepingCapacity: true)
    }
  }
}
