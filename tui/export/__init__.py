"""Consumers of the View for operators, headless: the Prometheus exporter (`metrics`) and the
alert deliveries that reach a person off the terminal (`deliver`). Neither imports Textual."""
