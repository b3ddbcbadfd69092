package io.connectgrpc.jvm.host;

import java.io.PrintWriter;
import java.io.StringWriter;

/**
 * A failure as a task's status shows it: a first line that names the failure and, when it
 * wraps another, its root cause ({@code Tolerance exceeded in error handler:
 * java.lang.NumberFormatException: For input string: "x"}), then Java's whole stack trace,
 * causes included. Kafka Connect shows the wrapper only and leaves the cause deep in the
 * trace; the worker's statuses open on both, for Python tasks as for Java ones.
 */
final class Traces {

    private Traces() {
    }

    static String statusTrace(Throwable failure) {
        return headline(failure) + "\n" + stackTrace(failure);
    }

    /** The first line of {@link #statusTrace}. */
    static String headline(Throwable failure) {
        Throwable root = rootCause(failure);
        if (root == failure) {
            return described(failure);
        }
        return firstLine(failure) + ": " + described(root);
    }

    static Throwable rootCause(Throwable failure) {
        Throwable root = failure;
        // bounded: a cause chain that loops back on itself is cut
        for (int depth = 0; depth < 64 && root.getCause() != null && root.getCause() != root; depth++) {
            root = root.getCause();
        }
        return root;
    }

    private static String described(Throwable failure) {
        String message = failure.getMessage();
        String name = failure.getClass().getName();
        if (message == null || message.isBlank()) {
            return name;
        }
        return name + ": " + message.strip().lines().findFirst().orElse("");
    }

    private static String firstLine(Throwable failure) {
        String message = failure.getMessage();
        if (message == null || message.isBlank()) {
            return failure.getClass().getName();
        }
        return message.strip().lines().findFirst().orElse("");
    }

    static String stackTrace(Throwable failure) {
        StringWriter text = new StringWriter();
        try (PrintWriter out = new PrintWriter(text)) {
            failure.printStackTrace(out);
        }
        return text.toString().stripTrailing();
    }
}
