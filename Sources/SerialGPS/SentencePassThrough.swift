import NMEA

/// The reader's side of NMEA pass-through: the sentences its framer accepted, collected as
/// they arrived (with `*hh`, CR LF added) and handed to the hub in batches: before each epoch
/// (so an epoch's sentences reach subscribers ahead of its fix) and at the end of each read.
/// Nothing is framed or checksummed a second time, and nothing is copied unless a subscriber
/// asked for sentences.
struct SentencePassThrough {
  private var batch: [UInt8] = []

  /// Takes a sentence the framer delivered; binary frames are not passed on.
  mutating func observe(_ frame: Frame) {
    guard case .sentence(let sentence) = frame else { return }
    batch.append(contentsOf: sentence.line)
    batch.append(0x0D)
    batch.append(0x0A)
  }

  /// Publishes what was collected, if anything.
  mutating func flush(to hub: SubscriptionHub) {
    guard !batch.isEmpty else { return }
    hub.publish(sentences: batch)
    // Handed on as it is (subscribers hold it); the next batch starts a new array.
    batch = []
  }
}
