import Locking

/// Runs a blocking call (autobaud listening, a long drain) on a thread of its own and awaits
/// its result, so that it never holds one of the cooperative pool's few threads.
func onOwnThread<Value: Sendable>(
  _ body: @escaping @Sendable () -> Value
) async -> Value {
  let result = Locked<Value?>(nil)
  let thread = ReaderThread.start { result.withLock { $0 = body() } }
  await thread.join()
  return result.withLock { $0! }
}
