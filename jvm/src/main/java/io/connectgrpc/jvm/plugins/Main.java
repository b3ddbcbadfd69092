package io.connectgrpc.jvm.plugins;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The host's command line, for tests and debugging: JSON on stdout, logs on stderr.
 *
 * <pre>
 *   java -cp 'jvm/target/connect-grpc-jvm.jar:jvm/target/lib/*' io.connectgrpc.jvm.plugins.Main \
 *       list --plugin-path DIR[,DIR...] [--discovery MODE] [--worker-property KEY=VALUE ...]
 *   ... Main validate --plugin-path DIR [--discovery MODE] --config FILE|-
 * </pre>
 *
 * <p>Exit codes: 0 with the answer; 1 when Kafka's scan or validation failed outright (the
 * error as {@code {"error": {...}}} on stdout); 2 for a bad command line.
 */
public final class Main {

    private static final String USAGE = String.join("\n",
            "usage: Main list --plugin-path PATH [--discovery MODE] [--worker-property KEY=VALUE ...]",
            "       Main validate --plugin-path PATH [--discovery MODE] [--worker-property KEY=VALUE ...]"
                    + " --config FILE|-",
            "MODE: only_scan, hybrid_warn (Kafka's default), hybrid_fail, service_load");

    private Main() {
    }

    public static void main(String[] args) {
        // Kafka's herder and worker keep non-daemon threads: the answer is the process's end.
        System.exit(run(args, System.in, System.out, System.err));
    }

    static int run(String[] args, InputStream stdin, PrintStream out, PrintStream err) {
        Arguments arguments;
        try {
            arguments = Arguments.parse(args);
        } catch (IllegalArgumentException e) {
            err.println(e.getMessage());
            err.println(USAGE);
            return 2;
        }
        Map<String, String> connectorConfig = null;
        if (arguments.command.equals("validate")) {
            try {
                connectorConfig = Json.readStringMap(readConfig(arguments.config, stdin));
            } catch (IOException | IllegalArgumentException e) {
                err.println("cannot read the connector config: " + e.getMessage());
                return 2;
            }
        }
        try (PluginCatalogue catalogue = PluginCatalogue.open(arguments.workerProps)) {
            Object answer = connectorConfig == null
                    ? JavaPluginHost.listing(catalogue)
                    : catalogue.validate(connectorConfig);
            out.println(Json.write(answer));
            return 0;
        } catch (Exception | LinkageError e) {
            out.println(Json.write(Json.error(e)));
            e.printStackTrace(err);
            return 1;
        }
    }

    private static String readConfig(String source, InputStream stdin) throws IOException {
        if (source.equals("-")) {
            return new String(stdin.readAllBytes(), StandardCharsets.UTF_8);
        }
        return Files.readString(Path.of(source), StandardCharsets.UTF_8);
    }

    /** The parsed command line. */
    private static final class Arguments {
        String command;
        String config;
        final Map<String, String> workerProps = new LinkedHashMap<>();

        static Arguments parse(String[] args) {
            Arguments parsed = new Arguments();
            List<String> rest = new ArrayList<>(List.of(args));
            if (rest.isEmpty() || !(rest.get(0).equals("list") || rest.get(0).equals("validate"))) {
                throw new IllegalArgumentException("a command is needed: list or validate");
            }
            parsed.command = rest.remove(0);
            while (!rest.isEmpty()) {
                String option = rest.remove(0);
                if (rest.isEmpty()) {
                    throw new IllegalArgumentException(option + " needs a value");
                }
                String value = rest.remove(0);
                switch (option) {
                    case "--plugin-path" -> parsed.workerProps.put("plugin.path", value);
                    case "--discovery" -> parsed.workerProps.put("plugin.discovery", value);
                    case "--config" -> parsed.config = value;
                    case "--worker-property" -> {
                        int equals = value.indexOf('=');
                        if (equals <= 0) {
                            throw new IllegalArgumentException("--worker-property takes KEY=VALUE, got " + value);
                        }
                        parsed.workerProps.put(value.substring(0, equals), value.substring(equals + 1));
                    }
                    default -> throw new IllegalArgumentException("unknown option " + option);
                }
            }
            if (!parsed.workerProps.containsKey("plugin.path")) {
                throw new IllegalArgumentException("--plugin-path is needed");
            }
            if (parsed.command.equals("validate") && parsed.config == null) {
                throw new IllegalArgumentException("validate needs --config FILE or --config -");
            }
            return parsed;
        }
    }
}
