package io.connectgrpc.jvm.logs;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * Which connector and task a log line belongs to, read from Kafka Connect's logging context:
 * the MDC value {@code connector.context} that Kafka's {@code LoggingContext} sets on the threads
 * running a connector's or a task's code ({@code "[name|worker] "}, {@code "[name|task-0] "},
 * {@code "[name|task-0|offsets] "}). {@code task} is -1 for a connector's own line; {@link #NONE}
 * for a line logged outside any context.
 */
record ConnectorContext(String connector, int task) {

    static final ConnectorContext NONE = new ConnectorContext("", -1);

    /** The scopes Kafka appends after the task, if any (they say what, not whose). */
    private static final Set<String> SCOPES = Set.of("worker", "offsets", "validate");
    private static final String TASK = "task-";

    static ConnectorContext parse(String value) {
        if (value == null) {
            return NONE;
        }
        String text = value.strip();
        if (text.length() < 3 || text.charAt(0) != '[' || text.charAt(text.length() - 1) != ']') {
            return NONE;
        }
        // a connector's name may hold '|': the scopes and the task are read from the end
        List<String> parts = new ArrayList<>(Arrays.asList(text.substring(1, text.length() - 1).split("\\|", -1)));
        while (parts.size() > 1 && SCOPES.contains(parts.get(parts.size() - 1))) {
            parts.remove(parts.size() - 1);
        }
        int task = -1;
        if (parts.size() > 1) {
            task = taskNumber(parts.get(parts.size() - 1));
            if (task >= 0) {
                parts.remove(parts.size() - 1);
            }
        }
        String connector = String.join("|", parts);
        return connector.isEmpty() ? NONE : new ConnectorContext(connector, task);
    }

    private static int taskNumber(String part) {
        if (!part.startsWith(TASK) || part.length() == TASK.length() || part.length() > TASK.length() + 9) {
            return -1;
        }
        for (int i = TASK.length(); i < part.length(); i++) {
            if (!Character.isDigit(part.charAt(i))) {
                return -1;
            }
        }
        return Integer.parseInt(part.substring(TASK.length()));
    }
}
