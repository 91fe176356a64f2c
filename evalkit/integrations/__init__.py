"""evalkit inside the evaluation tools teams already run: MLflow GenAI scorers and a ragas metric.

* :mod:`evalkit.integrations.ragas`: ``EvalkitFaithfulness``, evalkit's judge as a ragas metric
  (``ragas.evaluate(dataset, metrics=[EvalkitFaithfulness()])``, no LLM);
* :mod:`evalkit.integrations.mlflow`: ``EvalkitGroundedness``, ``RecallAtK``, ``HitAtK``,
  ``NDCGAtK`` for ``mlflow.genai.evaluate(data=..., scorers=[...])``, no LLM.

Each answer is scored by :class:`~evalkit.integrations.samples.SampleScorer`, which hands it
to ``evalkit score --answers``'s own code (:func:`evalkit.scoring.score_answers`) as a
one-row answers file, so a row's value is the one ``evalkit score`` gives the same data.
Each module imports its tool (ragas, mlflow) when it is imported itself; this package does not.
"""
