package io.tidemark.lakehouse;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.function.Supplier;

import org.apache.spark.sql.SparkSession;

/**
 * How every spark-submit entry point starts and ends: one command-line grammar (options, at most
 * one bare word, and {@code key=value} settings over the defaults, the config file, the environment
 * and Spark's conf), {@code --help}, and the exit codes of {@link ExitCode}, each non-zero one with a
 * single line {@code tidemark <command>: ...} printed last, after Spark's own shutdown output, so an
 * operator (or Airflow's log tail) sees it.
 */
public final class JobMain {
    private JobMain() {
    }

    /**
     * What a job's command line may hold besides its settings.
     *
     * @param command the job's name in messages, as the launcher calls it ({@code maintain})
     * @param usage   printed by {@code --help}, before the list of settings
     * @param flags   options without a value ({@code --dry-run})
     * @param valued  options with one ({@code --out FILE} or {@code --out=FILE})
     * @param words   the bare words it takes, at most one per command line ({@code register}, {@code status})
     */
    public record Spec(String command, String usage, Set<String> flags, Set<String> valued, Set<String> words) {

        public static Spec of(String command, String usage) {
            return new Spec(command, usage, Set.of(), Set.of(), Set.of());
        }

        public Spec flags(String... names) {
            return new Spec(command, usage, Set.of(names), valued, words);
        }

        public Spec valued(String... names) {
            return new Spec(command, usage, flags, Set.of(names), words);
        }

        public Spec words(String... names) {
            return new Spec(command, usage, flags, valued, Set.of(names));
        }

        /** "--a, --b, --help", as a refusal lists them. */
        String known() {
            List<String> all = new ArrayList<>(new TreeSet<>(words));
            all.addAll(new TreeSet<>(flags));
            all.addAll(new TreeSet<>(valued));
            all.add(PIPELINE_OPTION);
            all.add("--help");
            return String.join(", ", all);
        }
    }

    /** Every job's {@code --pipeline FILE}: the setting {@code pipeline}, as {@code pipeline=FILE} would set it. */
    public static final String PIPELINE_OPTION = "--pipeline";

    /**
     * A parsed command line.
     *
     * @param help   {@code --help} was given: print {@link #usage(Spec)}, do nothing else
     * @param config the settings, over the defaults, the config file and the environment; without a
     *               {@code pipeline} setting, the pipeline the lakehouse records ({@link RecordedPipeline})
     */
    public record Arguments(Set<String> flags, Map<String, String> values, Optional<String> word, boolean help, TidemarkConfig config) {

        public boolean has(String flag) {
            return flags.contains(flag);
        }

        public Optional<String> value(String option) {
            return Optional.ofNullable(values.get(option));
        }
    }

    /**
     * Parses {@code args} by {@code spec}.
     *
     * @throws RequestRefusedException bad input, with a one-line message (the configuration's own
     *                                 {@link IllegalArgumentException} for a bad setting)
     */
    public static Arguments parse(Spec spec, String[] args, Map<String, String> env) {
        TidemarkConfig.Builder settings = TidemarkConfig.load(null, env);
        Set<String> flags = new LinkedHashSet<>();
        Map<String, String> values = new LinkedHashMap<>();
        String word = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            int eq = a.indexOf('=');
            String name = a.startsWith("--") && eq > 0 ? a.substring(0, eq) : a;
            if (name.equals("--help") || name.equals("-h")) {
                return new Arguments(Set.of(), Map.of(), Optional.empty(), true, settings.build());
            } else if (name.equals(PIPELINE_OPTION)) {
                if (!name.equals(a)) {
                    settings.set(TidemarkConfig.Key.PIPELINE, a.substring(eq + 1));
                } else if (i + 1 < args.length) {
                    settings.set(TidemarkConfig.Key.PIPELINE, args[++i]);
                } else {
                    throw new RequestRefusedException(name + " needs a value: a pipeline file, or a shipped pipeline's name");
                }
            } else if (spec.flags().contains(name) && name.equals(a)) {
                flags.add(name);
            } else if (spec.valued().contains(name)) {
                String value;
                if (!name.equals(a)) {
                    value = a.substring(eq + 1);
                } else if (i + 1 < args.length) {
                    value = args[++i];
                } else {
                    throw new RequestRefusedException(name + " needs a value");
                }
                values.put(name, value);
            } else if (spec.words().contains(a)) {
                if (word != null) {
                    throw new RequestRefusedException("give one of " + String.join(", ", new TreeSet<>(spec.words())) + ", not '" + word
                            + "' and '" + a + "'");
                }
                word = a;
            } else if (!a.startsWith("-") && eq > 0) {
                settings.set(a.substring(0, eq), a.substring(eq + 1));
            } else {
                throw new RequestRefusedException("argument '" + a + "' is neither an option (" + spec.known() + ") nor a key=value setting");
            }
        }
        return new Arguments(flags, values, Optional.ofNullable(word), false, settings.buildForLakehouse());
    }

    /** The {@code --help} text: the job's usage, then every setting with its default. */
    public static String usage(Spec spec) {
        return spec.usage() + "  --pipeline FILE                     the pipeline to run (a file, or a shipped pipeline's name): the setting pipeline\n"
                + TidemarkConfig.describeKeys();
    }

    /**
     * For a {@code main}: the parsed command line, or, for {@code --help}, the usage printed and exit
     * 0; for bad input, its line and exit {@link ExitCode#BAD_INPUT}. Nothing has started either way.
     */
    public static Arguments parseOrExit(Spec spec, String[] args) {
        Arguments a = orRefuse(spec.command(), () -> parse(spec, args, System.getenv()));
        if (a.help()) {
            System.out.print(usage(spec));
            System.out.flush();
            throw exit(spec.command(), ExitCode.OK, null);
        }
        return a;
    }

    /**
     * What {@code check} returns; when it refuses the input ({@link IllegalArgumentException}, which
     * {@link RequestRefusedException} is), the command's one-line refusal and exit
     * {@link ExitCode#BAD_INPUT} instead. For the checks of a {@code main} before anything starts.
     */
    public static <T> T orRefuse(String command, Supplier<T> check) {
        try {
            return check.get();
        } catch (IllegalArgumentException e) {
            throw exit(command, ExitCode.BAD_INPUT, Errors.oneLine(e));
        }
    }

    /**
     * Ends the JVM with {@code code}, printing {@code tidemark <command>: line} last when there is a
     * line. Declared to return an error so that a caller can {@code throw} it and the compiler knows
     * the branch ends; it never returns.
     */
    public static Error exit(String command, ExitCode code, String line) {
        if (line != null) {
            System.err.println("tidemark " + command + ": " + line);
        }
        System.out.flush();
        System.err.flush();
        System.exit(code.code());
        return new AssertionError("System.exit returned");
    }

    /**
     * Runs {@code body} in a new Spark session and exits accordingly: 0 when it returns null,
     * {@link ExitCode#FAILED} with its line when it returns one, {@link ExitCode#BAD_INPUT} for a
     * {@link RequestRefusedException}, {@link ExitCode#FAILED} for storage that cannot be used or any
     * other failure (with the trace).
     */
    public static void run(String command, TidemarkConfig config, Function<SparkSession, String> body) {
        SparkSession spark = SparkSessions.create(config, "tidemark-" + command);
        ExitCode status;
        String message = null;
        try {
            message = body.apply(spark);
            status = message == null ? ExitCode.OK : ExitCode.FAILED;
        } catch (RequestRefusedException e) {
            status = ExitCode.BAD_INPUT;
            message = Errors.oneLine(e);
        } catch (StorageCheck.StorageUnavailableException e) {
            status = ExitCode.FAILED;
            message = e.getMessage();
        } catch (RuntimeException e) {
            e.printStackTrace();
            status = ExitCode.FAILED;
            message = Errors.oneLine(e);
        } finally {
            spark.stop();
        }
        if (status != ExitCode.OK) {
            throw exit(command, status, message);
        }
    }
}
