import Testing

@testable import GPSDServer

/// `RawWriterSlot`: who may write to the receiver through the raw port.
@Suite struct RawWriterSlotTests {
  @Test func theFirstToSendWritesUntilItLeaves() {
    var slot = RawWriterSlot(writable: true)
    #expect(slot.input(from: 1, peer: "a") == .write)
    #expect(slot.input(from: 2, peer: "b") == .refuse(.taken(by: "a")))
    // Told once; its later bytes are dropped without a word.
    #expect(slot.input(from: 2, peer: "b") == .drop)
    #expect(slot.input(from: 1, peer: "a") == .write)
    slot.left(1)
    #expect(slot.writer == nil)
    #expect(slot.input(from: 2, peer: "b") == .write)
    #expect(slot.input(from: 3, peer: "c") == .refuse(.taken(by: "b")))
  }

  @Test func aReadOnlyPortTellsEachSenderOnce() {
    var slot = RawWriterSlot(writable: false)
    #expect(slot.input(from: 1, peer: "a") == .refuse(.readOnly))
    #expect(slot.input(from: 1, peer: "a") == .drop)
    #expect(slot.input(from: 2, peer: "b") == .refuse(.readOnly))
    #expect(slot.writer == nil)
    // A connection that left and a new one with its number is told again.
    slot.left(1)
    #expect(slot.input(from: 1, peer: "a2") == .refuse(.readOnly))
  }

  @Test func aNonWriterLeavingChangesNothing() {
    var slot = RawWriterSlot(writable: true)
    #expect(slot.input(from: 1, peer: "a") == .write)
    slot.left(2)
    #expect(slot.writer == 1)
  }
}
