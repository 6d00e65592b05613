import SerialGPS

// README.md's library examples, kept here so that the build checks they compile. They are
// not run: they need a receiver on /dev/ttyACM0. (The replay example is a test that runs:
// ReplayConnectorTests.)

func readmeUsingTheLibrary() async {
  let receiver = GPSReceiver(device: "/dev/ttyACM0")  // nothing is opened yet

  for await event in receiver.subscribe() {  // the first subscriber powers it on
    switch event {
    case .fix(let update):
      let fix = update.fix
      print(fix.timestamp?.description ?? "-", fix.mode, fix.latitude ?? 0, fix.longitude ?? 0)
    case .satellites(let view):
      print("\(view.usedCount) of \(view.satellites.count) satellites used")
    case .status(let status):
      print("status:", status)  // powering on, streaming, disconnected …
    }
  }
}

func readmeOtherWays(myConnector: any ReceiverConnector) {
  _ = GPSReceiver(device: "/dev/ttyUSB0", baud: .fixed(.b9600))
  _ = GPSReceiver(selecting: .first)
  _ = GPSReceiver(selecting: .serialNumber("01A7F3C2"))
  _ = GPSReceiver(connector: myConnector, clock: ManualClock())
}
