package dev.sparkrm.riffle;

/** Where the scheduler reports what happened (telemetry, or nothing). */
public interface RiffleEvents {
  void mergeEnded(RiffleScheduler.Group group);

  void shuffleSealed(RiffleScheduler.ShuffleState shuffle);

  /** Events that go nowhere, when telemetry is off. */
  RiffleEvents NONE = new RiffleEvents() {
    @Override
    public void mergeEnded(RiffleScheduler.Group group) {}

    @Override
    public void shuffleSealed(RiffleScheduler.ShuffleState shuffle) {}
  };
}
