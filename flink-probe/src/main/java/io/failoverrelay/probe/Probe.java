package io.failoverrelay.probe;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.CompletedCheckpointStorageLocation;
import org.apache.flink.runtime.state.filesystem.AbstractFsCheckpointStorageAccess;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

import java.io.DataInputStream;
import java.io.FileInputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.stream.LongStream;
import java.util.stream.Stream;

/**
 * The real-Flink tier's probe (tests/flink_job.py drives it; docs/restore.md, "Proven by Flink").
 *
 * <pre>
 * Probe run [--payload-bytes N] [--wait-seconds S] CONFIG RUN_DIR EXPECTED_DIR KEYS RECORDS_PER_SECOND STEP...
 *   Runs the keyed-counter job in a MiniCluster configured with exactly the properties in CONFIG (a
 *   FlinkDeployment's flinkConfiguration, plus what the operator adds: the job id, the restore path). Steps, in
 *   order: chk:N (wait for N more completed checkpoints), savepoint, stop-with-savepoint, cancel, crash-in-checkpoint
 *   (hold the next checkpoint's barrier and wait to be killed), hold (run until killed, or until a file
 *   RUN_DIR/stop-with-savepoint appears: then stop with a savepoint and print its path; fails if the job ends),
 *   filled (wait until every key has been seen in this run). One JSON object per line on stdout per event;
 *   "running" once the job is RUNNING; "checkpoints" lists every checkpoint this run completed so far (also those
 *   before the step) with the seconds its barrier reached the counter and its completion was notified. With a file RUN_DIR/records present at the start, every
 *   record processed is appended to it (the sink of the real-Karmada tier). --payload-bytes gives every key a
 *   payload of N random bytes besides its count (a state of KEYS x N bytes; Counter); --wait-seconds bounds each
 *   wait (180 by default).
 * Probe metadata CONFIG PATH...
 *   Loads each state's _metadata with Flink's own Checkpoints.loadCheckpointMetadata (file systems configured from
 *   CONFIG); one JSON line per path, with the state's full size (stateSize) and what this checkpoint wrote itself
 *   (checkpointedSize: less than the full size for an incremental checkpoint that shares older files).
 * </pre>
 */
public final class Probe {
    private static final long START = System.nanoTime();
    private static long waitNanos = 180_000_000_000L;

    public static void main(String[] args) throws Exception {
        if (args.length >= 2 && args[0].equals("metadata")) {
            Configuration config = load(Paths.get(args[1]));
            FileSystem.initialize(config, null);
            for (int i = 2; i < args.length; i++) {
                metadata(args[i]);
            }
            System.exit(0);
        }
        int first = 1;
        int payloadBytes = 0;
        while (args.length >= first + 2 && args[0].equals("run") && args[first].startsWith("--")) {
            if (args[first].equals("--payload-bytes")) {
                payloadBytes = Integer.parseInt(args[first + 1]);
            } else if (args[first].equals("--wait-seconds")) {
                waitNanos = Long.parseLong(args[first + 1]) * 1_000_000_000L;
            } else {
                break;
            }
            first += 2;
        }
        if (args.length < first + 5 || !args[0].equals("run") || args[first].startsWith("--")) {
            System.err.println("usage: Probe run [--payload-bytes N] [--wait-seconds S] CONFIG RUN_DIR EXPECTED_DIR "
                    + "KEYS RECORDS_PER_SECOND STEP... | Probe metadata CONFIG PATH...");
            System.exit(2);
        }
        try {
            run(Paths.get(args[first]), Paths.get(args[first + 1]), Paths.get(args[first + 2]),
                    Integer.parseInt(args[first + 3]), Integer.parseInt(args[first + 4]), payloadBytes,
                    List.of(args).subList(first + 5, args.length));
        } catch (Throwable error) {
            // Exit whatever happened: the MiniCluster's threads are not daemons and would keep the JVM alive.
            error.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }

    private static void run(Path configFile, Path runDir, Path expectedDir, int keys, int rate, int payloadBytes,
            List<String> steps) throws Exception {
        Properties properties = properties(configFile);
        Configuration config = load(configFile);
        // File systems (s3:// of flink-s3-fs-hadoop, found on the class path) take their options (s3.endpoint, ...)
        // from this configuration, as a cluster entrypoint initializes them; a plain local run would not.
        FileSystem.initialize(config, null);
        Files.createDirectories(runDir.resolve("completed"));
        Files.createDirectories(expectedDir);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(1);
        long batch = Math.max(1, rate / 1000);  // records per millisecond of pause
        env.fromSequence(0, Long.MAX_VALUE).uid("sequence").name("sequence")
                .map(value -> {
                    if (rate > 0 && value % batch == 0) {
                        Thread.sleep(1);
                    }
                    return value;
                }).returns(Types.LONG).uid("pace").name("pace")
                .keyBy(value -> value % keys, Types.LONG)
                .flatMap(new Counter(keys, expectedDir.toString(), runDir.toString(), payloadBytes))
                .uid("counter").name("counter")
                .sinkTo(new DiscardingSink<>()).uid("discard").name("discard");
        JobClient client = env.executeAsync("failover-relay-probe");
        event("submitted", "\"jobId\":\"" + client.getJobID() + "\"");
        waitFor(client, () -> client.getJobStatus().get() == JobStatus.RUNNING, "the job to run");
        event("running", "\"jobId\":\"" + client.getJobID() + "\"");
        String restorePath = properties.getProperty("execution.state-recovery.path",
                properties.getProperty("execution.savepoint.path"));
        if (restorePath != null) {
            Path report = runDir.resolve("restored");
            waitFor(client, () -> Files.exists(report), "the restored counts");
            event("restored", "\"path\":" + quote(restorePath) + ",\"report\":" + quote(Files.readString(report)));
        }
        for (String step : steps) {
            if (step.startsWith("chk:")) {
                // Counted above the newest snapshot taken so far: a savepoint's completion is notified too.
                long floor = newest(expectedDir);
                int wanted = Integer.parseInt(step.substring(4));
                waitFor(client, () -> completedAbove(runDir, floor) >= wanted, wanted + " more checkpoints");
                event("checkpoints", "\"newest\":" + newest(runDir.resolve("completed")) + ",\"completed\":"
                        + completedTimes(runDir));
            } else if (step.equals("filled")) {
                Path filled = runDir.resolve("filled");
                waitFor(client, () -> Files.exists(filled), "every key to be seen");
                event("filled", "\"at\":" + secondsAt(filled));
            } else if (step.equals("savepoint")) {
                String path = client.triggerSavepoint(null, SavepointFormatType.CANONICAL).get();
                event("savepoint", "\"path\":" + quote(path));
            } else if (step.equals("stop-with-savepoint")) {
                String path = client.stopWithSavepoint(false, null, SavepointFormatType.CANONICAL).get();
                event("stopped-with-savepoint", "\"path\":" + quote(path));
            } else if (step.equals("cancel")) {
                client.cancel().get();
                waitFor(null, () -> ended(client), "the job to cancel");
                event("cancelled", "");
            } else if (step.equals("hold")) {
                Path stopRequest = runDir.resolve("stop-with-savepoint");
                while (true) {
                    if (Files.exists(stopRequest)) {
                        // What the Flink operator does for a savepoint suspend: stop with a savepoint (no drain)
                        // into the job's state.savepoints.dir.
                        String path = client.stopWithSavepoint(false, null, SavepointFormatType.CANONICAL).get();
                        event("stopped-with-savepoint", "\"path\":" + quote(path));
                        return;
                    }
                    JobStatus status = client.getJobStatus().get();
                    if (status.isGloballyTerminalState()) {
                        client.getJobExecutionResult().get();  // throws the job's failure
                        throw new IllegalStateException("the job ended (" + status + ") while held");
                    }
                    Thread.sleep(200);
                }
            } else if (step.equals("crash-in-checkpoint")) {
                Files.writeString(runDir.resolve("block"), "");
                Path blocking = runDir.resolve("blocking");
                waitFor(client, () -> Files.exists(blocking), "a checkpoint to block");
                event("blocking", "\"checkpointId\":" + Files.readString(blocking).trim());
                Thread.sleep(Long.MAX_VALUE);  // kill -9 comes from the test
            } else {
                throw new IllegalArgumentException("unknown step: " + step);
            }
        }
    }

    private static Properties properties(Path file) throws Exception {
        Properties properties = new Properties();
        try (InputStream in = new FileInputStream(file.toFile())) {
            properties.load(new InputStreamReader(in, StandardCharsets.UTF_8));
        }
        return properties;
    }

    private static Configuration load(Path file) throws Exception {
        Properties properties = properties(file);
        Configuration config = new Configuration();
        for (String key : properties.stringPropertyNames()) {
            config.setString(key, properties.getProperty(key));
        }
        return config;
    }

    private static void metadata(String pointer) {
        try {
            CompletedCheckpointStorageLocation location =
                    AbstractFsCheckpointStorageAccess.resolveCheckpointPointer(pointer);
            CheckpointMetadata metadata;
            try (DataInputStream in = new DataInputStream(location.getMetadataHandle().openInputStream())) {
                metadata = Checkpoints.loadCheckpointMetadata(in, Probe.class.getClassLoader(), pointer);
            }
            long size = 0;
            long checkpointed = 0;
            for (OperatorState state : metadata.getOperatorStates()) {
                size += state.getStateSize();
                checkpointed += state.getCheckpointedSize();
            }
            System.out.println("{\"path\":" + quote(pointer) + ",\"checkpointId\":" + metadata.getCheckpointId()
                    + ",\"operators\":" + metadata.getOperatorStates().size() + ",\"stateSize\":" + size
                    + ",\"checkpointedSize\":" + checkpointed + "}");
        } catch (Exception error) {
            System.out.println("{\"path\":" + quote(pointer) + ",\"error\":" + quote(error.toString()) + "}");
        }
    }

    interface Condition {
        boolean holds() throws Exception;
    }

    /** Polls until the condition holds; fails fast when the job has ended meanwhile (its exception is the cause). */
    private static void waitFor(JobClient client, Condition condition, String what) throws Exception {
        long deadline = System.nanoTime() + waitNanos;
        while (!condition.holds()) {
            if (client != null) {
                JobStatus status = client.getJobStatus().get();
                if (status.isGloballyTerminalState()) {
                    client.getJobExecutionResult().get();  // throws the job's failure
                    throw new IllegalStateException("the job ended (" + status + ") before " + what);
                }
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out waiting for " + what);
            }
            Thread.sleep(20);
        }
    }

    /** Whether the job has ended; the per-job MiniCluster shuts down right after, and then cannot be asked. */
    private static boolean ended(JobClient client) {
        try {
            return client.getJobStatus().get().isGloballyTerminalState();
        } catch (Exception shutDown) {
            return true;
        }
    }

    private static long completedAbove(Path runDir, long floor) throws Exception {
        return ids(runDir.resolve("completed")).filter(id -> id > floor).count();
    }

    /**
     * The checkpoints this run completed, each as {@code [id, barrier seconds, completion seconds]} (-1 for a barrier
     * this run did not see), as a JSON array.
     */
    private static String completedTimes(Path runDir) throws Exception {
        StringBuilder out = new StringBuilder("[");
        for (long id : ids(runDir.resolve("completed")).sorted().toArray()) {
            Path barrier = runDir.resolve("barriers").resolve(Long.toString(id));
            out.append(out.length() > 1 ? "," : "").append('[').append(id).append(',')
                    .append(Files.exists(barrier) ? secondsAt(barrier) : "-1").append(',')
                    .append(secondsAt(runDir.resolve("completed").resolve(Long.toString(id)))).append(']');
        }
        return out.append(']').toString();
    }

    /** The time a Counter file holds (System.nanoTime, one clock in this JVM) in seconds since START. */
    private static String secondsAt(Path file) throws Exception {
        String text = Files.readString(file).trim();
        return text.isEmpty() ? "-1" : seconds(Long.parseLong(text));
    }

    private static String seconds(long nanoTime) {
        return String.format("%.3f", (nanoTime - START) / 1e9);
    }

    private static long newest(Path directory) throws Exception {
        return ids(directory).max().orElse(0);
    }

    /** The checkpoint ids named by the files in a directory (Counter writes one file per id). */
    private static LongStream ids(Path directory) throws Exception {
        List<Long> ids = new ArrayList<>();
        try (Stream<Path> files = Files.list(directory)) {
            files.map(file -> file.getFileName().toString()).filter(name -> name.matches("[0-9]+"))
                    .forEach(name -> ids.add(Long.parseLong(name)));
        }
        return ids.stream().mapToLong(Long::longValue);
    }

    private static void event(String name, String fields) {
        System.out.println("{\"event\":\"" + name + "\",\"seconds\":" + seconds(System.nanoTime())
                + (fields.isEmpty() ? "" : "," + fields) + "}");
        System.out.flush();
    }

    private static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c == '\n') {
                out.append("\\n");
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
