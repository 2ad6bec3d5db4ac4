"""Host tools reached by URI scheme."""
