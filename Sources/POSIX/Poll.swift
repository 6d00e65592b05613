import Glibc

/// `poll` over a few descriptors until one of them is ready or `deadline` passes. EINTR is
/// retried with the time left. Returns false when the deadline passed with nothing ready. A nil
/// deadline waits forever: the thread sleeps in the kernel with no timer armed.
package func poll(
  _ fds: UnsafeMutableBufferPointer<pollfd>, until deadline: MonotonicInstant?
) throws(Errno) -> Bool {
  while true {
    // Each attempt, the first and any after EINTR, waits only for the time left.
    let ready = try retryingOnInterrupt {
      Glibc.poll(
        fds.baseAddress, nfds_t(fds.count), deadline.map { $0.timeLeft.pollMilliseconds } ?? -1)
    }
    if ready > 0 { return true }
    // poll may return a hair early by its own reckoning; only give up once ours agrees.
    if let deadline, deadline.timeLeft <= .zero { return false }
  }
}

/// The same over an array.
package func poll(_ fds: inout [pollfd], until deadline: MonotonicInstant?) throws(Errno) -> Bool {
  try fds.withUnsafeMutableBufferPointer { buffer throws(Errno) in
    try poll(buffer, until: deadline)
  }
}
