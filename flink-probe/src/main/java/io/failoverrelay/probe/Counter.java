package io.failoverrelay.probe;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.util.Collector;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.TreeMap;

/**
 * Keyed counters: one count per key (the sequence number modulo the number of keys) in Flink keyed state, the state
 * a restore must bring back. Parallelism 1, so this one instance sees every key and keeps a plain mirror of the
 * counts; at each snapshot (checkpoint or savepoint, synchronously at the barrier) it writes that mirror to
 * {@code expected/<checkpoint id>}: what the snapshot holds, for the test to compare with what a restore brings back.
 * After a restore it reports each key's count as Flink restored it (the first time the key is seen) to
 * {@code run/restored}. Files are the only channel to the runner: the job runs in a MiniCluster of the same JVM, but
 * nothing here relies on sharing static fields with it. When {@code run/records} exists as the job opens, every
 * record's sequence number is appended to it, a line each, unbuffered, so a kill -9 loses none
 * that was counted: the records a failover test reads.
 */
final class Counter extends RichFlatMapFunction<Long, Long> implements CheckpointedFunction, CheckpointListener {
    private final int keys;
    private final String expectedDir;
    private final String runDir;
    private transient ValueState<Long> count;
    private transient Map<Long, Long> mirror;
    private transient boolean restored;
    private transient long firstValue;
    private transient StringBuilder restoredReport;
    private transient int restoredKeys;
    private transient OutputStream records;

    Counter(int keys, String expectedDir, String runDir) {
        this.keys = keys;
        this.expectedDir = expectedDir;
        this.runDir = runDir;
    }

    @Override
    public void open(OpenContext context) throws IOException {
        count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        mirror = new TreeMap<>();
        firstValue = -1;
        restoredReport = new StringBuilder();
        Path recordsFile = Paths.get(runDir, "records");
        records = Files.exists(recordsFile) ? new FileOutputStream(recordsFile.toFile(), true) : null;
    }

    @Override
    public void initializeState(FunctionInitializationContext context) {
        restored = context.isRestored();
    }

    @Override
    public void flatMap(Long value, Collector<Long> out) throws Exception {
        long key = value % keys;
        Long current = count.value();
        long before = current == null ? 0 : current;
        if (firstValue < 0) {
            firstValue = value;
        }
        if (!mirror.containsKey(key) && restored) {
            restoredReport.append(key).append(' ').append(before).append('\n');
            if (++restoredKeys == keys) {
                write(Paths.get(runDir, "restored"), "first " + firstValue + "\n" + restoredReport);
            }
        }
        count.update(before + 1);
        mirror.put(key, before + 1);
        if (records != null) {
            records.write((value + "\n").getBytes(StandardCharsets.US_ASCII));
        }
        out.collect(value);
    }

    @Override
    public void snapshotState(FunctionSnapshotContext context) throws Exception {
        long id = context.getCheckpointId();
        if (Files.exists(Paths.get(runDir, "block"))) {
            // The runner asked for a crash inside this checkpoint: say so and hold the barrier until kill -9.
            write(Paths.get(runDir, "blocking"), id + "\n");
            Thread.sleep(Long.MAX_VALUE);
        }
        StringBuilder text = new StringBuilder();
        text.append("complete ").append(!restored || mirror.size() == keys).append('\n');
        for (Map.Entry<Long, Long> entry : mirror.entrySet()) {
            text.append(entry.getKey()).append(' ').append(entry.getValue()).append('\n');
        }
        write(Paths.get(expectedDir, Long.toString(id)), text.toString());
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) throws IOException {
        write(Paths.get(runDir, "completed", Long.toString(checkpointId)), "");
    }

    /** Written whole under a temporary name and renamed, so a reader never sees half a file. */
    static void write(Path path, String text) throws IOException {
        Files.createDirectories(path.getParent());
        Path partial = path.resolveSibling(path.getFileName() + ".partial");
        Files.write(partial, text.getBytes(StandardCharsets.UTF_8));
        Files.move(partial, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
