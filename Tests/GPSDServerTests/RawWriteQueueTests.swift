import Chipsets
import NMEA
import Testing

@testable import GPSDServer

/// `RawWriteQueue`: what the raw port's writer sends, framed and bounded on its way to the
/// receiver.
@Suite struct RawWriteQueueTests {
  func input(
    _ queue: inout RawWriteQueue, _ bytes: [UInt8], from id: Int = 1
  ) -> [RawWriteQueue.Action] {
    bytes.withUnsafeBytes { queue.input(from: id, peer: "peer \(id)", $0) }
  }

  let sentence = Array(NMEAChecksum.frame("PMTK605"))

  @Test func onlyWholeSentencesAndFramesGoOnOneBatchAtATime() throws {
    var queue = RawWriteQueue(writable: true, limit: 4096, batchLimit: 32)
    let frame = try UBX.frame(UBXMessageID(0x06, 0x04), payload: [0, 0, 0x08, 0])
    // A sentence cut in two, noise, a UBX frame: the first whole sentence goes at once.
    #expect(input(&queue, Array(sentence[..<5])).isEmpty)
    #expect(
      input(&queue, Array(sentence[5...]) + [0x00, 0x41] + frame) == [
        .write(sentence + frame, batch: 1)
      ])
    #expect(queue.queued == 0)
    // The next batch only once the receiver wrote the first; at most 32 bytes in one.
    #expect(input(&queue, sentence + sentence + sentence).isEmpty)
    #expect(queue.queued == 3 * sentence.count)
    #expect(queue.written(2).isEmpty, "not the batch in flight")
    #expect(queue.written(1) == [.write(sentence + sentence, batch: 2)])
    #expect(queue.written(2) == [.write(sentence, batch: 3)])
    #expect(queue.written(3).isEmpty)
    #expect(queue.counters.bytesForwarded == 4 * sentence.count + frame.count)
    #expect(queue.counters.bytesDropped == 2, "the two bytes of noise")
  }

  @Test func aWriterThatSendsWithoutEndStopsBeingRead() {
    var queue = RawWriteQueue(writable: true, limit: 64 * 1024, batchLimit: 1024)
    // 100 MB of sentences offered in 16 KiB reads, as the loop reads them: only while the
    // queue is not full, and the receiver never finishes its first batch.
    let chunk = Array(repeating: sentence, count: 16 * 1024 / sentence.count).flatMap { $0 }
    var offered = 0
    var reads = 0
    var writes = 0
    while offered < 100_000_000, queue.reads(1) {
      writes += input(&queue, chunk).count
      offered += chunk.count
      reads += 1
    }
    #expect(!queue.reads(1), "the full queue is not read")
    #expect(queue.reads(2), "other connections still are")
    #expect(writes == 1, "one batch at a time")
    #expect(queue.queued >= queue.limit && queue.queued <= queue.limit + chunk.count)
    #expect(offered < 100 * 1024)
    // It leaves: what waited is dropped, nothing more goes to the receiver.
    let forwarded = queue.counters.bytesForwarded
    queue.left(1)
    #expect(queue.queued == 0)
    #expect(queue.written(1).isEmpty)
    #expect(queue.counters.bytesForwarded == forwarded && forwarded <= 1024)
    #expect(queue.counters.bytesDropped == offered - forwarded)
    #expect(queue.reads(1))
  }

  @Test func aHalfFrameIsDroppedWhenItsWriterLeaves() {
    var queue = RawWriteQueue(writable: true)
    // A UBX header announcing 65 535 bytes of payload.
    #expect(input(&queue, [0xB5, 0x62, 0x06, 0x04, 0xFF, 0xFF]).isEmpty)
    queue.left(1)
    #expect(queue.counters.bytesDropped == 6)
    #expect(queue.counters.bytesForwarded == 0)
    // The next writer starts afresh: its sentence is not taken for that frame's payload.
    #expect(input(&queue, sentence, from: 2) == [.write(sentence, batch: 1)])
  }

  /// An RTCM 3 frame whose message is `count` bytes counting up from `seed`.
  func rtcm3(_ count: Int, seed: UInt8) -> [UInt8] {
    RTCM3.frame(message: (0..<count).map { UInt8(truncatingIfNeeded: Int(seed) + $0) })
  }

  @Test func rtcm3CorrectionsGoOnAsWholeFrames() {
    // What str2str sends into the raw port: RTCM 3 frames, cut anywhere by the reads.
    var queue = RawWriteQueue(writable: true, batchLimit: 4096)
    let first = rtcm3(100, seed: 1)
    let second = rtcm3(1023, seed: 2)
    #expect(input(&queue, Array(first[..<40])).isEmpty)
    #expect(
      input(&queue, Array(first[40...]) + second + sentence) == [
        .write(first + second + sentence, batch: 1)
      ])
    #expect(queue.counters.bytesForwarded == first.count + second.count + sentence.count)
    #expect(queue.counters.bytesDropped == 0)
    #expect(queue.framing.rtcm3Frames == 2)
  }

  @Test func aCorruptRTCM3FrameIsDropped() {
    var queue = RawWriteQueue(writable: true, batchLimit: 4096)
    let good = rtcm3(50, seed: 3)
    var corrupt = rtcm3(60, seed: 4)
    corrupt[30] ^= 0x01
    #expect(input(&queue, good + corrupt + good) == [.write(good + good, batch: 1)])
    #expect(queue.counters.bytesDropped == corrupt.count)
    #expect(queue.framing.badBinaryFrames == 1)
  }

  @Test func halfAnRTCM3FrameIsDroppedWhenItsWriterLeaves() {
    var queue = RawWriteQueue(writable: true)
    // A header announcing 1023 bytes of message, and 100 of them.
    let half = [0xD3, 0x03, 0xFF] + Array(repeating: UInt8(0x55), count: 100)
    #expect(input(&queue, half).isEmpty)
    #expect(queue.counters.bytesDropped == 0, "held for the rest of its frame")
    queue.left(1)
    #expect(queue.counters.bytesDropped == half.count)
    #expect(queue.counters.bytesForwarded == 0)
    #expect(input(&queue, sentence, from: 2) == [.write(sentence, batch: 1)])
  }

  @Test func aSentenceWithoutItsLineEndNeverGoes() {
    var queue = RawWriteQueue(writable: true)
    let dangling = Array("$PMTK220,1000".utf8)
    #expect(input(&queue, dangling).isEmpty)
    queue.left(1)
    #expect(queue.counters.bytesDropped == dangling.count)
    #expect(input(&queue, Array("$PMTK220,1000*1F".utf8), from: 2).isEmpty)
    #expect(
      input(&queue, [0x0D, 0x0A], from: 2) == [
        .write(Array("$PMTK220,1000*1F\r\n".utf8), batch: 1)
      ])
  }

  @Test func refusalsAreTheSlots() {
    var queue = RawWriteQueue(writable: false)
    #expect(input(&queue, sentence) == [.refuse(id: 1, .readOnly)])
    #expect(input(&queue, sentence).isEmpty)
    #expect(queue.counters == RawWriteQueue.Counters())
  }

  @Test func aBatchTheOldReceiverHadIsNotWaitedFor() {
    var queue = RawWriteQueue(writable: true, batchLimit: 8)
    #expect(input(&queue, sentence + sentence) == [.write(sentence, batch: 1)])
    #expect(queue.receiverChanged() == [.write(sentence, batch: 2)])
  }
}
