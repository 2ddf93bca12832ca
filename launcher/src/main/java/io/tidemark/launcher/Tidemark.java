package io.tidemark.launcher;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.lang.reflect.Field;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TimeZone;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.config.Configurator;
import org.apache.spark.sql.SparkSession;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

import io.tidemark.broker.BrokerException;
import io.tidemark.lakehouse.Errors;
import io.tidemark.lakehouse.ExitCode;
import io.tidemark.lakehouse.SparkSessions;
import io.tidemark.lakehouse.TidemarkConfig;
import io.tidemark.stream.StreamFailure;

/**
 * The {@code tidemark} command: one launcher for the whole system (README, "Day to day").
 *
 * <p>Exit codes: 0 success, 1 failure, 2 bad input (one line on stderr naming the command and what
 * was wrong). Settings come from the defaults, the config file, {@code TIDEMARK_*} environment
 * variables, then {@code --set key=value}, then the subcommand's own flags.
 */
@Command(name = "tidemark",
        mixinStandardHelpOptions = true,
        versionProvider = Tidemark.Version.class,
        description = "Event-time KPIs from Kafka: streaming for speed, batch for truth.",
        subcommands = {
                DemoCommand.class,
                BrokerCommand.class,
                GenerateCommand.class,
                StreamCommand.class,
                ReconcileCommand.class,
                MaintainCommand.class,
                StatusCommand.class,
                ReportCommand.class,
                SqlCommand.class,
                CatalogCommand.class,
                PipelineCommand.class,
        })
public final class Tidemark implements Callable<Integer> {

    // The exit codes every command shares, from the one table of them (ExitCode).
    public static final int OK = ExitCode.OK.code();
    public static final int FAILED = ExitCode.FAILED.code();
    public static final int BAD_INPUT = ExitCode.BAD_INPUT.code();
    /** Stopped by Ctrl-C or SIGTERM before it was done (128 + SIGINT, as shells report it). */
    public static final int INTERRUPTED = ExitCode.INTERRUPTED.code();

    @Mixin
    SettingsOptions settings = new SettingsOptions();

    @Spec
    CommandSpec spec;

    private final Map<String, String> env;
    final Sessions sessions;

    /**
     * Where a command's Spark session comes from and what becomes of it when the command ends. The
     * command line gives each command a session of its own ({@link #OWN}); a test runs the commands
     * in its JVM with its own session ({@link #shared}).
     */
    public interface Sessions {
        SparkSession open(TidemarkConfig config, String appName);

        void release(SparkSession spark);

        /** A session built for the command and stopped when it ends. */
        Sessions OWN = new Sessions() {
            @Override
            public SparkSession open(TidemarkConfig config, String appName) {
                return SparkSessions.create(config, appName);
            }

            @Override
            public void release(SparkSession spark) {
                spark.stop();
            }
        };

        /** {@code spark} for every command, left running when it ends. */
        static Sessions shared(SparkSession spark) {
            return new Sessions() {
                @Override
                public SparkSession open(TidemarkConfig config, String appName) {
                    return spark;
                }

                @Override
                public void release(SparkSession ignored) {
                }
            };
        }
    }

    public Tidemark() {
        this(System.getenv());
    }

    public Tidemark(Map<String, String> env) {
        this(env, Sessions.OWN);
    }

    public Tidemark(Map<String, String> env, Sessions sessions) {
        this.env = env;
        this.sessions = sessions;
    }

    @Override
    public Integer call() {
        throw new UserError("a command is required: " + String.join(", ", spec.subcommands().keySet())
                + " (see 'tidemark --help')");
    }

    /**
     * The configuration: defaults, file, environment, {@code --set}, then {@code flags} (the
     * subcommand's own flags, already as dotted keys). Bad input becomes a {@link UserError}.
     */
    TidemarkConfig config(Map<String, String> flags) {
        return config(List.of(settings), flags);
    }

    /** As {@link #config(Map)}, with the --config/--set of each command from the root down (later wins). */
    TidemarkConfig config(List<SettingsOptions> chain, Map<String, String> flags) {
        return UserError.check(() -> {
            Path configFile = null;
            List<String> overrides = new ArrayList<>();
            for (SettingsOptions s : chain) {
                if (s.configFile != null) {
                    configFile = s.configFile;
                }
                overrides.addAll(s.overrides);
                if (s.pipeline != null) {
                    overrides.add(TidemarkConfig.Key.PIPELINE.name + "=" + s.pipeline);
                }
            }
            TidemarkConfig.Builder b = TidemarkConfig.load(configFile, env);
            for (String o : overrides) {
                int eq = o.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("--set expects KEY=VALUE, got '" + o + "'");
                }
                b.set(o.substring(0, eq).trim(), o.substring(eq + 1).trim());
            }
            flags.forEach((k, v) -> {
                if (v != null) {
                    b.set(k, v);
                }
            });
            return b.buildForLakehouse();
        });
    }

    Map<String, String> env() {
        return env;
    }

    /** A command line with Tidemark's exit codes and error reporting, writing to the given streams. */
    public static CommandLine commandLine(Map<String, String> env, PrintWriter out, PrintWriter err) {
        return commandLine(env, out, err, Sessions.OWN);
    }

    /** As {@link #commandLine(Map, PrintWriter, PrintWriter)}, the commands' Spark sessions from {@code sessions}. */
    public static CommandLine commandLine(Map<String, String> env, PrintWriter out, PrintWriter err, Sessions sessions) {
        CommandLine cl = new CommandLine(new Tidemark(env, sessions));
        cl.setOut(out);
        cl.setErr(err);
        cl.setCaseInsensitiveEnumValuesAllowed(true);
        cl.getCommandSpec().usageMessage().footerHeading("%nAlso: tidemark cluster start|status|stop, a local Spark standalone cluster (ops/spark-cluster --help).%n"
                        + "%nSettings, with their defaults: --set KEY=VALUE, a line KEY=VALUE in the --config file, the%n"
                        + "environment variable TIDEMARK_<KEY> (upper case, dots and dashes as underscores), or under spark-submit%n"
                        + "--conf spark.tidemark.<KEY>=VALUE:%n")
                .footer(settingsHelp().replace("%", "%%"));
        for (CommandLine sub : allSubcommands(cl)) {
            sub.getCommandSpec().usageMessage().footer(
                    "%nSettings are read from --config FILE, TIDEMARK_* variables and --set KEY=VALUE; 'tidemark --help' lists them.");
        }
        cl.setParameterExceptionHandler((ex, args) -> {
            CommandLine c = ex.getCommandLine();
            c.getErr().println(c.getCommandSpec().qualifiedName() + ": " + Errors.firstLine(ex.getMessage())
                    + " (see '" + c.getCommandSpec().qualifiedName() + " --help')");
            c.getErr().flush();
            return BAD_INPUT;
        });
        cl.setExecutionExceptionHandler((ex, c, parseResult) -> {
            String name = c.getCommandSpec().qualifiedName();
            if (ex instanceof Interrupted) {
                c.getErr().println(name + ": " + ex.getMessage());
                c.getErr().flush();
                return INTERRUPTED;
            }
            if (ex instanceof StreamFailure f) {
                // A cause the operator can act on: one line; the trace only on request.
                c.getErr().println(name + ": " + f.line());
                if (env.get("TIDEMARK_DEBUG") != null) {
                    f.getCause().printStackTrace(c.getErr());
                }
                c.getErr().flush();
                return f.exitCode();
            }
            if (isBadInput(ex)) {
                c.getErr().println(name + ": " + Errors.firstLine(ex.getMessage()));
                c.getErr().flush();
                return BAD_INPUT;
            }
            c.getErr().println(name + ": failed: " + Errors.withCauses(ex));
            if (env.get("TIDEMARK_DEBUG") != null) {
                ex.printStackTrace(c.getErr());
            } else {
                c.getErr().println("(set TIDEMARK_DEBUG=1 for the stack trace)");
            }
            c.getErr().flush();
            return FAILED;
        });
        return cl;
    }

    /** Every setting with its default and doc, wrapped for an 80-column terminal. */
    static String settingsHelp() {
        StringBuilder sb = new StringBuilder();
        for (TidemarkConfig.Key k : TidemarkConfig.Key.values()) {
            sb.append("  ").append(k.name).append(" = ").append(k.defaultValue.isEmpty() ? "(empty)" : k.defaultValue).append('\n');
            wrap(sb, k.doc);
        }
        sb.append("  ").append(TidemarkConfig.KAFKA_OPTION_PREFIX).append("<name>\n");
        wrap(sb, "Passed to the Kafka clients unchanged, e.g. kafka.option.security.protocol=SSL.");
        return sb.toString();
    }

    private static void wrap(StringBuilder sb, String text) {
        StringBuilder line = new StringBuilder("      ");
        for (String word : text.split(" ")) {
            if (line.length() + word.length() > 78 && line.length() > 6) {
                sb.append(line.toString().stripTrailing()).append('\n');
                line = new StringBuilder("      ");
            }
            line.append(word).append(' ');
        }
        sb.append(line.toString().stripTrailing()).append('\n');
    }

    private static List<CommandLine> allSubcommands(CommandLine cl) {
        List<CommandLine> all = new ArrayList<>();
        for (CommandLine sub : cl.getSubcommands().values()) {
            all.add(sub);
            all.addAll(allSubcommands(sub));
        }
        return all;
    }

    static boolean isBadInput(Throwable ex) {
        if (ex instanceof UserError) {
            return true;
        }
        if (ex instanceof BrokerException b) {
            return switch (b.reason()) {
                case CLASSPATH_MISSING, PORT_IN_USE, ALREADY_RUNNING -> true;
                default -> false;
            };
        }
        return false;
    }

    /** Runs a command line; returns the exit code. */
    public static int run(String[] args, Map<String, String> env, PrintWriter out, PrintWriter err) {
        return run(args, env, out, err, Sessions.OWN);
    }

    /** As {@link #run(String[], Map, PrintWriter, PrintWriter)}, the commands' Spark sessions from {@code sessions} (a test's, in-process). */
    public static int run(String[] args, Map<String, String> env, PrintWriter out, PrintWriter err, Sessions sessions) {
        int code;
        try {
            code = commandLine(env, out, err, sessions).execute(args);
        } catch (LinkageError e) {
            // picocli passes Errors through: a class missing or changed under the running JVM.
            err.println("tidemark: failed: " + Errors.withCauses(e) + " (the build changed while this ran? run it again)");
            code = FAILED;
        }
        out.flush();
        err.flush();
        return code;
    }

    public static void main(String[] args) {
        // All times are UTC; this also makes java.sql.Timestamp print in UTC.
        TimeZone.setDefault(TimeZone.getTimeZone("UTC"));
        // Keep Spark's catalog directory out of the user's working directory.
        if (System.getProperty("spark.sql.warehouse.dir") == null) {
            System.setProperty("spark.sql.warehouse.dir",
                    Path.of(System.getProperty("java.io.tmpdir"), "tidemark-spark-warehouse-" + System.getProperty("user.name")).toString());
        }
        if (System.getenv("TIDEMARK_DEBUG") == null && System.getProperty("tidemark.log.trace") == null) {
            // Before the first log line: Spark's ERROR lines without their traces (log4j2.properties).
            System.setProperty("tidemark.log.trace", "none");
        }
        quietKnownNoise();
        int code = run(args, System.getenv(), new PrintWriter(System.out, true), new PrintWriter(System.err, true));
        System.exit(code);
    }

    /**
     * Lines a healthy run would print otherwise: warnings Spark logs on every stream (plan
     * truncation, large tasks, cancelling an idle job group) and a Java-version notice that Spark's
     * shaded DataSketches writes straight to stderr the first time a sketch is used. Best effort.
     */
    static void quietKnownNoise() {
        try {
            for (String logger : List.of("org.apache.spark.util.SparkStringUtils",
                    // "task of very large size": the stream's KPI MERGE ships its batch aggregate with the task
                    "org.apache.spark.scheduler.TaskSetManager",
                    // "Failed to cancel job group": stopping a query between batches
                    "org.apache.spark.scheduler.DAGScheduler",
                    // "Namespace tidemark was created concurrently": registering the tables a second time in one session
                    "org.apache.spark.sql.execution.datasources.v2.CreateNamespaceExec")) {
                Configurator.setLevel(logger, Level.ERROR);
            }
        } catch (Throwable e) {
            // logging as configured
        }
        PrintStream err = System.err;
        try {
            System.setErr(new PrintStream(OutputStream.nullOutputStream()));
            Field printed = Class.forName("org.apache.datasketches.memory.internal.ResourceImpl")
                    .getDeclaredField("JAVA_VERSION_WARNING_PRINTED");
            printed.setAccessible(true);
            ((AtomicBoolean) printed.get(null)).set(true);
        } catch (Throwable e) {
            // the notice may appear once
        } finally {
            System.setErr(err);
        }
    }

    /** Versions from the build. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            Properties p = new Properties();
            try (InputStream in = Tidemark.class.getResourceAsStream("/tidemark-launcher.properties")) {
                if (in != null) {
                    p.load(in);
                }
            } catch (IOException e) {
                // unknown version
            }
            return new String[] {"tidemark " + p.getProperty("version", "(unknown version)")
                    + " (Spark " + p.getProperty("spark.version", "?") + ", Delta " + p.getProperty("delta.version", "?") + ")"};
        }
    }
}
