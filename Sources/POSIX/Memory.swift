import CPOSIX

/// The process's resident memory.
package enum ResidentMemory {
  /// Gives back the resident pages of the executable's code, once start-up is over.
  ///
  /// Start-up runs code that is never needed again (argument parsing, the runtime's one-time
  /// set-up, the discovery of receivers), and the kernel maps code in 64 KB windows around
  /// every page touched (fault-around), so a long-running program keeps far more of its code
  /// resident than it runs. This drops the whole of it from the process's resident set
  /// (`madvise(MADV_DONTNEED)` on the executable's code segments only; never on data, and never
  /// on libraries), and out of the page cache where no other process maps them
  /// (`MADV_PAGEOUT`, then `POSIX_FADV_DONTNEED`), with readahead off for the code
  /// (`MADV_RANDOM`): the kernel maps the cached pages around every fault (64 KB), so code left
  /// cached came back a window at a time with the first page that ran near it. What runs
  /// afterwards is read back a page at a time (once; a board's flash reads 4 KB in well under a
  /// millisecond), and what does not run stays out.
  ///
  /// Call it once, synchronously, where a long-running command has finished starting (it costs
  /// no timer and no thread: nothing wakes the process later). docs/posix.md; the figures are
  /// in BENCHMARKS.md (Footprint).
  ///
  /// - Returns: the bytes of code advised.
  @discardableResult
  package static func releaseExecutableCode() throws(Errno) -> Int {
    try Int(valueOrErrno(cposix_release_executable_code()))
  }
}
