"""The table of every sparkrm configuration key.

This is the one place a key is declared. README.md's configuration table and
``conf/spark-defaults.conf`` are generated from it (``python -m spark_plugin
docs --write``), and the JVM reads it from the jar, so add keys here only.
"""

from .config import Key, KeyTable, Rule

#: Fully qualified class names that the ``spark.*`` keys below point Spark at.
PLUGIN_CLASS = "dev.sparkrm.SparkrmPlugin"
RIFFLE_SHUFFLE_MANAGER = "dev.sparkrm.riffle.RiffleShuffleManager"

KEYS = KeyTable([
    Key("spark.sparkrm.telemetry.enabled", "bool", "true",
        "Record per-task, per-stage, per-job and per-executor metrics in the driver "
        "(read them with `spark_plugin.telemetry(spark)`)."),
    Key("spark.sparkrm.telemetry.dir", "string", None,
        "Local directory on the driver where each application writes its telemetry as "
        "`<appId>.telemetry.jsonl` (created if missing). Unset: keep telemetry in memory only.",
        example="/tmp/sparkrm-telemetry"),
    Key("spark.sparkrm.telemetry.bufferRecords", "int", "200000",
        "How many of the most recent telemetry records the driver keeps in memory for "
        "Python to read. Older records are dropped from memory (never from the file).",
        low=1000, high=100_000_000),

    # Riffle: shuffle-file merging (shuffle_merge/).
    Key("spark.riffle.enabled", "bool", "false",
        "Merge small shuffle map outputs into large files inside the executors. Needs "
        f"`spark.shuffle.manager={RIFFLE_SHUFFLE_MANAGER}`; the `riffle` feature sets both.",
        job_setting="enabled"),
    Key("spark.riffle.merge.policy", "enum", "blocksize",
        "`blocksize`: merge once the average blocks of pending outputs add up to `targetBlockBytes` "
        "(the thesis's production choice: merged reads near the target whatever the block size); "
        "`fanin`: merge every `fanIn` map outputs of a host (or executor). Setting `fanIn` without "
        "this key selects `fanin`.",
        options=("blocksize", "fanin"), job_setting="policy"),
    Key("spark.riffle.merge.fanIn", "int", "10",
        "Map outputs per merge under the `fanin` policy (N of N-way merging); setting it without "
        "`merge.policy` selects that policy.", low=2, high=10_000,
        job_setting="fan_in"),
    Key("spark.riffle.merge.targetBlockBytes", "size", "2m",
        "Merged block size the `blocksize` policy aims for; outputs whose blocks are already this "
        "large are not merged.", low=1, job_setting="target_block_bytes"),
    Key("spark.riffle.merge.maxFanIn", "int", "100",
        "Most map outputs in one merge under the `blocksize` policy (bounds merger memory).",
        low=2, high=10_000, job_setting="max_fan_in"),
    Key("spark.riffle.merge.scope", "enum", "host",
        "`host`: merge the outputs of all executors on one host together (the thesis's per-node "
        "merger; one executor of the host reads its neighbours' files directly, falling back to "
        "`executor` on a host where it cannot); `executor`: each executor merges only its own outputs.",
        options=("host", "executor"), job_setting="scope"),
    Key("spark.riffle.merge.leftovers", "bool", "true",
        "When the map stage ends, merge an executor's remaining outputs (at least two) unless the "
        "best-effort fraction is already reached.", job_setting="leftovers"),
    Key("spark.riffle.merge.timeout", "duration", "2min",
        "A merge running longer than this is abandoned; its outputs are read unmerged.", low=1),
    Key("spark.riffle.bestEffort.fraction", "double", "0.95",
        "After the map stage, reducers wait until this fraction of map outputs is merged (or every "
        "merge ended); merges still running are then cancelled.", low=0, high=1, low_open=True,
        job_setting="best_effort"),
    Key("spark.riffle.bestEffort.timeout", "duration", "10s",
        "Longest wait for merges after the map stage ends; then reducers start and pending merges "
        "are cancelled.", low=0, job_setting="best_effort_timeout"),
    Key("spark.riffle.bestEffort.maxWaitRatio", "double", "1.0",
        "Longest wait for merges after the map stage, as a multiple of that stage's duration "
        "(the sooner of this and the timeout applies), so short stages never wait long.",
        low=0, high=100, job_setting="max_wait_ratio"),
    Key("spark.riffle.merger.threads", "int", "2",
        "Merge threads per executor.", low=1, high=64),
    Key("spark.riffle.merger.memoryBudget", "size", "128m",
        "Buffer memory all merges of one executor may use at once; merges that do not fit wait.",
        low=1 << 20),
    Key("spark.riffle.merger.readBufferBytes", "size", "1m",
        "Read buffer per merged input (shrunk when a merge would not fit the budget).",
        low=4096, high=1 << 30),
    Key("spark.riffle.merger.writeBufferBytes", "size", "4m",
        "Write buffer per merge.", low=4096, high=1 << 30),
    Key("spark.riffle.read.planTimeout", "duration", "30s",
        "How much longer than the best-effort timeout a reducer waits for the driver's list of "
        "merged outputs before reading unmerged.", low=0),
    Key("spark.riffle.read.partialMerges", "bool", "true",
        "A reduce task that reads a range of map outputs (AQE's skew-join splits, the local shuffle "
        "reader) uses a merge at least two and at least half of whose outputs are in its range: it "
        "fetches the merged block whole and skips the other sub-blocks (one read instead of several, "
        "for at most twice the bytes). `false`: such merges are passed over and their outputs in the "
        "range read one by one.", job_setting="partial_merges"),
    Key("spark.riffle.read.verifyMaxBytes", "size", "64m",
        "Every merged sub-block is checksum-verified before any of its records are used; sub-blocks "
        "up to this size are verified in memory, larger ones through a local temporary file.", low=0),
    Key("spark.riffle.test.failMergeFraction", "double", "0",
        "Test only: fail this fraction of merges.", low=0, high=1),
    Key("spark.riffle.test.mergeDelay", "duration", "0",
        "Test only: delay every merge by this long.", low=0),
    Key("spark.riffle.test.loseMergedFiles", "bool", "false",
        "Test only: delete each merged data file right after it is committed."),
    Key("spark.riffle.test.peerFilesUnreadable", "bool", "false",
        "Test only: host-level merges find their neighbours' local directories unreadable."),

    # Wrangler: straggler prediction and task-delay hints (spark_plugin/wrangler/).
    Key("spark.wrangler.enabled", "bool", "false",
        "Sample every executor's node counters and let the driver-side predictor hold back task "
        "offers from executors predicted to straggle. Needs telemetry; the `wrangler` feature sets both."),
    Key("spark.wrangler.mode", "enum", "hold",
        "`hold`: withhold new task offers from a flagged executor (running tasks finish; nothing is "
        "killed or duplicated); `hint`: only log the holds that would be made.",
        options=("hold", "hint")),
    Key("spark.wrangler.interval", "duration", "5s",
        "Delta: how often executors sample their node counters and the predictor refreshes its "
        "decisions. Keep it below the usual gap between task launches.", low=50, high=600_000),
    Key("spark.wrangler.model.path", "file", None,
        "A model saved by `python -m spark_plugin.wrangler train --out`; the driver JVM scores it and decides. "
        "A `.json` model is installed by the JVM at start-up, so `spark-submit --conf` alone holds; another "
        "(joblib) is exported and installed by Wrangler's Python side (`spark_plugin.session` or "
        "`wrangler.start`). Unset: Python trains online from this application's telemetry once the warm-up "
        "window has passed and installs that model. The file is checked before the "
        "application starts: a `.json` model field by field against the JSON Schema "
        "`spark_plugin/wrangler/jvm/resources/dev/sparkrm/wrangler/model.schema.json`.",
        example="/tmp/wrangler.json", check="spark_plugin.wrangler.model_file:model_problem",
        fix_text="Write it with `python -m spark_plugin.wrangler train <telemetry.jsonl> --out <model>.json` "
                 "(or `export <model.joblib> --out <model>.json`), or remove the key."),
    Key("spark.wrangler.confidence", "double", "0.7",
        "p: an executor is held only while the calibrated probability that its tasks straggle "
        "exceeds this (and the SVM score is positive). 0 keeps only the score test.", low=0, high=1, high_open=True),
    Key("spark.wrangler.beta", "double", "1.3",
        "A task straggles when its duration per byte moved exceeds beta times the median of its "
        "stage (or job).", low=1, high=10, low_open=True),
    Key("spark.wrangler.scope", "enum", "stage",
        "Peers a task is compared with when labelling: its `stage` attempt, or its whole `job` "
        "(the thesis's choice).", options=("stage", "job")),
    Key("spark.wrangler.workload", "string", None,
        "Workload tag of this application's tasks for the multi-task model; use the tag the "
        "model was trained with (`train --workload`). Unset: `default`.", example="nightly-etl"),
    Key("spark.wrangler.train.warmup", "duration", "10min",
        "Online training: collect this long of telemetry before training the models, then freeze "
        "them.", low=1000),
    Key("spark.wrangler.train.minNodeTasks", "int", "100",
        "Labelled tasks an executor needs for its own model; executors with fewer use the shared "
        "multi-task model.", low=10, high=10_000_000),
    Key("spark.wrangler.hold.maxDuration", "duration", "15s",
        "Longest continuous hold of one executor; it is then released and not held again for one "
        "interval, so no task waits for it longer than this.", low=100, high=3_600_000),
    Key("spark.wrangler.hold.maxShare", "double", "0.25",
        "Largest share of the live executors held at once (at least one, never all): the most confident "
        "flags are held first. A hold saves only the tail task that would land on its executor, while every "
        "executor held takes its slots from all tasks.", low=0, high=1, low_open=True),
    Key("spark.wrangler.hold.waitAware", "bool", "false",
        "Price each hold against the task queue (Yaq's wait estimator): an executor is held only while the "
        "pending tasks it would push onto the other executors wait less than the straggle it avoids, (s - 1) "
        "times their stage's median task time, s its recent slowdown against the others (at least beta)."),
    Key("spark.wrangler.guard.enabled", "bool", "true",
        "Check every hold against the tasks that were running on its executor when it began (an idle "
        "executor's recent tasks): once they have run no slower than beta times the other executors' tasks "
        "(relative to their stages' medians), the hold ends and the executor is not held again for a back-off (twice hold.maxDuration, doubling while it "
        "repeats), whatever the model says."),
    Key("spark.wrangler.guard.window", "duration", "60s",
        "How far back the guard looks at the other executors' finished tasks.", low=1000, high=3_600_000),
    Key("spark.wrangler.guard.minTasks", "int", "1",
        "Finished tasks that ran through a hold needed before the guard judges it.",
        low=1, high=1_000_000),

    # Yaq's job gate and Pigeon's pools for drivers that run many jobs at once (spark_plugin/yaq/, pigeon/).
    Key("spark.yaq.policy", "enum", "srjf",
        "Which waiting job the gate releases first: `srjf` (least estimated task-seconds of work), `lrtf` "
        "(fewest estimated tasks) or `fifo` (arrival). Starved jobs go first whatever the policy.",
        options=("srjf", "lrtf", "fifo")),
    Key("spark.yaq.maxInFlight", "int", "4",
        "Jobs the gate lets run at once; the others wait at the gate in the policy's order. The gate cannot "
        "preempt, so keep it above the number of long jobs that run together, or a short job waits for one "
        "of them to end.", low=1, high=100_000),
    Key("spark.yaq.starvation.threshold", "duration", "60s",
        "ST: a job that has waited this long at the gate is released before every job that has not.",
        low=1, high=86_400_000),
    Key("spark.yaq.starvation.ratio", "double", "4.0",
        "ST_r: a job is also starved once it has waited this many times its own estimated length.",
        low=0, low_open=True),
    Key("spark.yaq.history.path", "string", None,
        "JSON file of past jobs' work by shape, read when the gate starts and written as jobs finish, so one "
        "driver's runs teach the next. Unset: the history lives as long as the gate.",
        example="/tmp/sparkrm-job-history.json"),
    Key("spark.pigeon.short.maxLength", "duration", "10s",
        "A job whose shape's past runs predict at most this long alone on every core runs in the "
        "`pigeon-short` pool; others in `pigeon-long`.", low=1),
    Key("spark.pigeon.short.weight", "int", "20",
        "Weight of the `pigeon-short` pool against `pigeon-long`'s 1 (Pigeon's W; about 20).",
        low=1, high=1000),
    Key("spark.pigeon.short.minShare", "double", "0.05",
        "Share of the cores the `pigeon-short` pool gets first (at least one slot; Spark's minShare, "
        "work-conserving, no preemption).", low=0, high=1),
], rules=[
    Rule("spark.wrangler.enabled", "true", "spark.sparkrm.telemetry.enabled", "true", must="true",
         why="Wrangler learns and predicts from telemetry: set spark.sparkrm.telemetry.enabled=true "
             "(the `wrangler` feature sets both), or turn Wrangler off."),
    Rule("spark.riffle.enabled", "true", "spark.shuffle.manager", "sort", must=RIFFLE_SHUFFLE_MANAGER,
         why="Riffle wraps Spark's sort shuffle and cannot run beside another shuffle manager: remove "
             "spark.riffle.enabled (the `riffle` feature) or the other spark.shuffle.manager."),
    Rule("spark.riffle.enabled", "true", "spark.shuffle.push.enabled", "false", must_not="true",
         why="Push-based shuffle already merges blocks, in the external shuffle service: keep one of them "
             "(set spark.shuffle.push.enabled=false, or remove spark.riffle.enabled)."),
])
