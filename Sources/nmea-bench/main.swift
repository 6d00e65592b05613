print("nmea-bench: not yet")
