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
  /// on libraries): what runs afterwards faults back in from the page cache, a minor fault per
  /// 64 KB window, and what does not run stays out. The pages themselves stay in the page cache
  /// (clean file pages, reclaimable) for any other process of the same file.
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
