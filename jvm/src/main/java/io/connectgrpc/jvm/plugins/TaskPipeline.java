package io.connectgrpc.jvm.plugins;

import java.lang.reflect.Field;
import java.util.List;

import org.apache.kafka.common.internals.Plugin;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.runtime.ConnectMetrics;
import org.apache.kafka.connect.runtime.ConnectorConfig;
import org.apache.kafka.connect.runtime.TransformationStage;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;
import org.apache.kafka.connect.util.ConnectorTaskId;

/**
 * The converters, transformations and predicates of a task of a connector, built as Kafka's
 * {@code Worker.startTask} builds them (called in the connector's class loader): the
 * connector config's converters, else the worker config's, each with its KIP-891 version,
 * and {@link ConnectorConfig#transformationStages}. For {@link PipelinePreview}.
 */
record TaskPipeline<R extends ConnectRecord<R>>(ConnectorConfig config, Converter key, Converter value,
                                                HeaderConverter header, List<TransformationStage<R>> stages) {

    static <R extends ConnectRecord<R>> TaskPipeline<R> of(Plugins plugins, ConnectorConfig config,
                                                           WorkerConfig worker, ConnectorTaskId id,
                                                           ConnectMetrics metrics) {
        Converter key = null;
        Converter value = null;
        HeaderConverter header = null;
        try {
            key = plugins.newConverter(config, WorkerConfig.KEY_CONVERTER_CLASS_CONFIG,
                    WorkerConfig.KEY_CONVERTER_VERSION);
            if (key == null) {
                key = plugins.newConverter(worker, WorkerConfig.KEY_CONVERTER_CLASS_CONFIG,
                        WorkerConfig.KEY_CONVERTER_VERSION);
            }
            value = plugins.newConverter(config, WorkerConfig.VALUE_CONVERTER_CLASS_CONFIG,
                    WorkerConfig.VALUE_CONVERTER_VERSION);
            if (value == null) {
                value = plugins.newConverter(worker, WorkerConfig.VALUE_CONVERTER_CLASS_CONFIG,
                        WorkerConfig.VALUE_CONVERTER_VERSION);
            }
            header = plugins.newHeaderConverter(config, WorkerConfig.HEADER_CONVERTER_CLASS_CONFIG,
                    WorkerConfig.HEADER_CONVERTER_VERSION);
            if (header == null) {
                header = plugins.newHeaderConverter(worker, WorkerConfig.HEADER_CONVERTER_CLASS_CONFIG,
                        WorkerConfig.HEADER_CONVERTER_VERSION);
            }
            List<TransformationStage<R>> stages = config.transformationStages(plugins, id, metrics);
            return new TaskPipeline<>(config, key, value, header, stages);
        } catch (RuntimeException | Error e) {
            Utils.closeQuietly(key, "key converter");
            Utils.closeQuietly(value, "value converter");
            Utils.closeQuietly(header, "header converter");
            throw e;
        }
    }

    void close() {
        for (TransformationStage<R> stage : stages) {
            Utils.closeQuietly(stage, "transformation stage");
        }
        Utils.closeQuietly(key, "key converter");
        Utils.closeQuietly(value, "value converter");
        Utils.closeQuietly(header, "header converter");
    }

    /**
     * A {@link TransformationStage}'s predicate, its negation and its transformation, which
     * Kafka's stage keeps to itself: its {@code apply} tests the predicate and transforms in
     * one call, and a preview shows which of the two happened. Called as that {@code apply}
     * calls them, each in its plugin's class loader.
     */
    record StageParts<R extends ConnectRecord<R>>(Predicate<R> predicate, boolean negate,
                                                  Transformation<R> transformation) {

        @SuppressWarnings("unchecked")
        static <R extends ConnectRecord<R>> StageParts<R> of(TransformationStage<R> stage) {
            Plugin<Predicate<R>> predicate = (Plugin<Predicate<R>>) field(stage, "predicatePlugin");
            Plugin<Transformation<R>> transformation = (Plugin<Transformation<R>>) field(stage, "transformationPlugin");
            return new StageParts<>(predicate == null ? null : predicate.get(), (Boolean) field(stage, "negate"),
                    transformation.get());
        }

        private static Object field(TransformationStage<?> stage, String name) {
            try {
                Field field = TransformationStage.class.getDeclaredField(name);
                field.setAccessible(true);
                return field.get(stage);
            } catch (ReflectiveOperationException | RuntimeException e) {
                throw new IllegalStateException("Kafka's TransformationStage no longer has its field " + name
                        + ", which a pipeline preview reads", e);
            }
        }

        boolean applies(Plugins plugins, R record) {
            if (predicate == null) {
                return true;
            }
            try (LoaderSwap swap = plugins.withClassLoader(predicate.getClass().getClassLoader())) {
                return negate ^ predicate.test(record);
            }
        }

        R apply(Plugins plugins, R record) {
            try (LoaderSwap swap = plugins.withClassLoader(transformation.getClass().getClassLoader())) {
                return transformation.apply(record);
            }
        }
    }
}
